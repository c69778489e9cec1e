// p4aqm: ECN and active queue management for BMv2 simple_switch_grpc (v1model).
// Ingress forwards; egress, which runs as a packet leaves its queue, runs the port's AQM
// algorithm, carries out its decision and exports telemetry. Shared steps are one control
// each under include/control/; each algorithm is one file under include/aqm/; formats and
// constants are in include/defines.p4.
#include <core.p4>
#include <v1model.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/control/forwarding.p4"
#include "include/control/rtt_tracker.p4"
#include "include/control/aqm_dispatch.p4"
#include "include/control/verdict.p4"
#include "include/control/telemetry.p4"
#include "include/control/ipv4_checksum.p4"

control IngressPipe(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    Forwarding() forwarding;
    RttTracker() rtt_tracker;

    apply {
        forwarding.apply(hdr, meta, std_meta);
        rtt_tracker.apply(hdr, std_meta.ingress_global_timestamp, meta.rtt_us);
    }
}

control EgressPipe(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {
    AqmDispatch() aqm;
    Verdict() verdict;
    TelemetryExport() telemetry_export;
    TelemetryFormat() telemetry_format;

    apply {
        if (std_meta.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            telemetry_format.apply(hdr, meta.rec);
        } else {
            bit<1> fresh;
            bit<1> fire;
            bit<2> ecn = ECN_NOT_ECT;
            if (hdr.ipv4.isValid()) {
                ecn = hdr.ipv4.ecn;
            }
            aqm.apply(hdr, ecn, std_meta, meta, fresh, fire);
            verdict.apply(meta.port_index, meta.group_index, meta.aqm.common, fire == 1, ecn, hdr,
                          std_meta, meta.rec);
            if (meta.aqm.common.isValid()) {
                telemetry_export.apply(meta.port_index, fresh, std_meta, meta.rec);
            }
        }
    }
}

V1Switch(PacketParser(),
         VerifyIpv4Checksum(),
         IngressPipe(),
         EgressPipe(),
         UpdateIpv4Checksum(),
         PacketDeparser()) main;
