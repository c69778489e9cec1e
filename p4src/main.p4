// p4aqm: ECN and active queue management for BMv2 simple_switch_grpc (v1model).
// Ingress forwards; egress, which runs as a packet leaves its queue, keeps each port's
// average queue, marks or drops, and exports telemetry. One control per concern, under
// include/control/; formats and constants in include/defines.p4.
#include <core.p4>
#include <v1model.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/control/forwarding.p4"
#include "include/control/aqm_config.p4"
#include "include/control/port_epoch.p4"
#include "include/control/prng.p4"
#include "include/control/queue_avg.p4"
#include "include/control/marker.p4"
#include "include/control/verdict.p4"
#include "include/control/telemetry.p4"
#include "include/control/ipv4_checksum.p4"

control IngressPipe(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    Forwarding() forwarding;

    apply {
        forwarding.apply(hdr, meta, std_meta);
    }
}

control EgressPipe(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {
    AqmConfig() config;
    PortEpoch() epoch;
    Prng() prng;
    QueueAverage() queue_avg;
    Marker() marker;
    Verdict() verdict;
    TelemetryExport() telemetry_export;
    TelemetryFormat() telemetry_format;
    Ipv4Checksum() ipv4_checksum;

    apply {
        if (std_meta.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            telemetry_format.apply(hdr, meta.rec);
        } else {
            port_t port = std_meta.egress_port;
            bit<1> fresh = 0;
            bit<32> seed = 0;
            bit<1> bmv2_random = 0;
            bool fire = false;

            meta.rec.port = (bit<16>)port;
            meta.rec.enq_ts = std_meta.enq_timestamp;
            meta.rec.deq_timedelta = std_meta.deq_timedelta;
            meta.rec.egress_ts = std_meta.egress_global_timestamp;
            meta.rec.qdepth = (bit<32>)std_meta.enq_qdepth;
            meta.rec.pkt_len = std_meta.packet_length;
            if (hdr.ipv4.isValid()) {
                meta.rec.ip_id = hdr.ipv4.identification;
            }

            config.apply(port, meta.aqm);
            if (meta.aqm.enabled == 1) {
                epoch.apply(port, fresh, meta.rec.epoch, seed, bmv2_random, meta.rec.pkt_seq);
                prng.apply(port, fresh, seed, bmv2_random, meta.rec.rnd);
                queue_avg.apply(port, fresh, meta.aqm, std_meta, meta.rec.avg);
                marker.apply(port, fresh, meta.aqm, meta.rec.avg, meta.rec.rnd,
                             meta.rec.region, meta.rec.prob, meta.rec.count, fire);
            }
            verdict.apply(port, meta.aqm, meta.rec.region, fire, std_meta.enq_qdepth, hdr,
                          std_meta, meta.rec.outcome, meta.rec.ecn_in, meta.rec.ecn_out);
            if (meta.aqm.enabled == 1) {
                telemetry_export.apply(port, fresh, std_meta, meta.rec);
            }
            ipv4_checksum.apply(hdr, meta.csum);
        }
    }
}

V1Switch(PacketParser(),
         NoChecksum(),
         IngressPipe(),
         EgressPipe(),
         NoChecksum(),
         PacketDeparser()) main;
