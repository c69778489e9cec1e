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
#include "include/control/aqm_config.p4"
#include "include/control/port_epoch.p4"
#include "include/control/prng.p4"
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
    Red() red_aqm;
    Newque() newque_aqm;
    Blue() blue_aqm;
    Pi() pi_aqm;
    Rem() rem_aqm;
    Verdict() verdict;
    TelemetryExport() telemetry_export;
    TelemetryFormat() telemetry_format;
    Ipv4Checksum() ipv4_checksum;

    apply {
        if (std_meta.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            telemetry_format.apply(hdr, meta.rec);
        } else {
            port_t port = std_meta.egress_port;
            bit<8> algorithm = ALGO_NONE;
            bit<1> fresh = 0;
            bool fire = false;
            bit<2> level = ECN_CE;

            config.apply(port, meta.aqm);
            algorithm = meta.aqm.common.algorithm;
            if (algorithm != ALGO_NONE) {
                bit<32> seed = 0;
                bit<1> bmv2_random = 0;
                meta.rec.port = (bit<16>)port;
                meta.rec.algorithm = algorithm;
                meta.rec.enq_ts = std_meta.enq_timestamp;
                meta.rec.deq_timedelta = std_meta.deq_timedelta;
                meta.rec.egress_ts = std_meta.egress_global_timestamp;
                meta.rec.qdepth = (bit<32>)std_meta.enq_qdepth;
                meta.rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
                meta.rec.arr_seq = meta.arr_seq;
                meta.rec.pkt_len = std_meta.packet_length;
                if (hdr.ipv4.isValid()) {
                    meta.rec.ip_id = hdr.ipv4.identification;
                }
                epoch.apply(port, fresh, meta.rec.epoch, seed, bmv2_random, meta.rec.pkt_seq);
                if (algorithm != ALGO_DROPTAIL) {
                    prng.apply(port, fresh, seed, bmv2_random, meta.rec.rnd);
                }
                // One line per algorithm: only the port's own runs.
                if (algorithm == ALGO_RED) {
                    red_aqm.apply(port, fresh, meta.aqm.red, std_meta, meta.rec, fire, level);
                } else if (algorithm == ALGO_NEWQUE) {
                    newque_aqm.apply(port, fresh, meta.aqm.common, meta.aqm.newque, std_meta,
                                     meta.rec, fire);
                } else if (algorithm == ALGO_BLUE) {
                    blue_aqm.apply(port, fresh, meta.aqm.blue, std_meta, meta.arr_seq,
                                   meta.rec, fire);
                } else if (algorithm == ALGO_PI) {
                    pi_aqm.apply(port, fresh, meta.aqm.pi, std_meta, meta.rec, fire);
                } else if (algorithm == ALGO_REM) {
                    rem_aqm.apply(port, fresh, meta.aqm.rem, std_meta, meta.arr_seq,
                                  meta.rec, fire);
                }
            }
            verdict.apply(port, meta.aqm.common, fire, level, std_meta.enq_qdepth, hdr, std_meta,
                          meta.rec);
            if (algorithm != ALGO_NONE) {
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
