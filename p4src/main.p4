// p4aqm: ECN and active queue management for BMv2 simple_switch_grpc (v1model).
// Ingress forwards; egress, which runs as a packet leaves its queue, runs the port's AQM
// algorithm, carries out its decision and exports telemetry. Built with
// P4AQM_DROP_AT_ENQUEUE, ingress runs the AQM instead, before the packet is queued
// (include/control/queue_at_arrival.p4). Shared steps are one control each under
// include/control/; each algorithm is one file under include/aqm/; formats and constants
// are in include/defines.p4. A build profile (include/profile.p4) carries only some
// algorithms and the shared steps they need.
#include <core.p4>
// Registers and counters indexed by the 9-bit port itself (standard metadata's): v1model's
// index type parameter, since this version.
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "include/defines.p4"
#include "include/profile.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/control/forwarding.p4"
#ifdef P4AQM_WITH_RTT_TRACKER
#include "include/control/rtt_tracker.p4"
#endif
#include "include/control/aqm_dispatch.p4"
#ifdef P4AQM_WITH_TELEMETRY
#include "include/control/telemetry.p4"
#endif
#include "include/control/ipv4_checksum.p4"
#ifdef P4AQM_DROP_AT_ENQUEUE
#include "include/control/queue_at_arrival.p4"
#endif

control IngressPipe(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    Forwarding() forwarding;
#ifdef P4AQM_WITH_RTT_TRACKER
    RttTracker() rtt_tracker;
#endif
#ifdef P4AQM_WITH_PRIORITY_QUEUES
    DualPi2Queue() dualpi2_queue;
#endif
#ifdef P4AQM_DROP_AT_ENQUEUE
    ArrivalView() arrival_view;
    AqmDispatch() aqm_stage;
    Admit() admit;
#endif

    apply {
        forwarding.apply(hdr, meta, std_meta);
#ifdef P4AQM_WITH_PRIORITY_QUEUES
        dualpi2_queue.apply(hdr, std_meta);
#endif
#ifdef P4AQM_WITH_RTT_TRACKER
        rtt_tracker.apply(hdr, std_meta.ingress_global_timestamp, meta.rtt_us);
#endif
#ifdef P4AQM_DROP_AT_ENQUEUE
        if (std_meta.egress_spec != DROP_PORT) {
            standard_metadata_t view;
            arrival_view.apply(std_meta.egress_spec, std_meta, view);
            aqm_stage.apply(hdr, meta, view);
            if (view.egress_spec == DROP_PORT) {
                mark_to_drop(std_meta);
            } else {
                admit.apply(std_meta.egress_spec);
            }
        }
#endif
    }
}

control EgressPipe(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {
#ifdef P4AQM_DROP_AT_ENQUEUE
    Departure() departure;
#else
    AqmDispatch() aqm_stage;
#endif
#ifdef P4AQM_WITH_TELEMETRY
    TelemetryExport() telemetry_export;
    TelemetryFormat() telemetry_format;
#endif
#ifdef P4AQM_WITH_PRIORITY_QUEUES
    DualPi2Charge() dualpi2_charge;
#endif

    apply {
#if defined(P4AQM_WITH_TELEMETRY) || defined(P4AQM_WITH_PRIORITY_QUEUES)
        if (std_meta.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
#if defined(P4AQM_WITH_TELEMETRY) && defined(P4AQM_WITH_PRIORITY_QUEUES)
            // A telemetry record for the CPU port, or a DualPI2 charge (dualpi2.p4): its
            // service slot in the classic queue was the point.
            if (std_meta.egress_port == CPU_PORT) {
                telemetry_format.apply(hdr, meta.rec, meta.export, meta.stamp);
            } else {
                mark_to_drop(std_meta);
            }
#elif defined(P4AQM_WITH_TELEMETRY)
            // A telemetry record for the CPU port: the only clones.
            telemetry_format.apply(hdr, meta.rec, meta.export, meta.stamp);
#else
            // A DualPI2 charge: the only clones.
            mark_to_drop(std_meta);
#endif
        } else
#endif
        {
#ifdef P4AQM_DROP_AT_ENQUEUE
            departure.apply(std_meta.egress_port, std_meta, meta.rec);
#else
            aqm_stage.apply(hdr, meta, std_meta);
#endif
#if defined(P4AQM_WITH_TELEMETRY) || defined(P4AQM_WITH_PRIORITY_QUEUES)
            if (meta.rec.isValid()) {
#ifdef P4AQM_WITH_TELEMETRY
#ifdef P4AQM_DROP_AT_ENQUEUE
                // The epoch's first packet may have been dropped in ingress: the telemetry
                // sequences run on across epochs (records carry their epoch), and count the
                // packets ingress admitted.
                meta.rec.fresh = 0;
#endif
                telemetry_export.apply(std_meta.egress_port, hdr, std_meta, meta.rec, meta.export,
                                       meta.stamp);
#endif
#ifdef P4AQM_WITH_PRIORITY_QUEUES
                if (meta.aqm.pi2.isValid()) {
                    dualpi2_charge.apply(meta.aqm.pi2, meta.rec, meta.stamp);
                }
#endif
            }
#endif
        }
    }
}

@pkginfo(name=P4AQM_PKG_NAME)
@description(P4AQM_PKG_ALGORITHMS)
V1Switch(PacketParser(),
         VerifyIpv4Checksum(),
         IngressPipe(),
         EgressPipe(),
         UpdateIpv4Checksum(),
         PacketDeparser()) main;
