#ifndef P4AQM_AQM_DISPATCH_P4
#define P4AQM_AQM_DISPATCH_P4

#include "../headers.p4"
#include "port_epoch.p4"
#include "prng.p4"

// What every AQM port runs before its algorithm: the record's inputs, the epoch (state
// resets) and one random draw. It holds no table, so each case of the dispatch can apply it.
control AqmStart(in port_t port,
                 in aqm_common_t c,
                 in headers_t hdr,
                 in standard_metadata_t std_meta,
                 inout aqm_record_t rec,
                 out bit<1> fresh) {
    PortEpoch() epoch;
    Prng() prng;

    apply {
        rec.port = (bit<16>)port;
        rec.epoch = c.epoch;
        rec.enq_ts = std_meta.enq_timestamp;
        rec.deq_timedelta = std_meta.deq_timedelta;
        rec.egress_ts = std_meta.egress_global_timestamp;
        rec.qdepth = (bit<32>)std_meta.enq_qdepth;
        rec.pkt_len = std_meta.packet_length;
        if (hdr.ipv4.isValid()) {
            rec.ip_id = hdr.ipv4.identification;
        }
        epoch.apply(port, c.epoch, fresh, rec.pkt_seq);
        prng.apply(port, fresh, c.seed, c.bmv2_random, rec.rnd);
    }
}

// Chooses the port's algorithm with the aqm_config table and runs only that algorithm:
// the table's action (one per algorithm, defined in the algorithm's file under aqm/)
// loads the port's epoch, seed and parameters, and the switch on it applies the
// algorithm's control, so the dispatch costs no condition. Every parameter is action data written over P4Runtime;
// control_plane/algorithms/ builds these actions from physical values.
control AqmDispatch(in port_t port,
                    in headers_t hdr,
                    in standard_metadata_t std_meta,
                    in bit<32> arr_seq,
                    inout aqm_params_t p,
                    inout aqm_record_t rec,
                    out bit<1> fresh,
                    out bool fire) {
    AqmStart() start;
    Red() red_aqm;
    Newque() newque_aqm;
    Blue() blue_aqm;
    Pi() pi_aqm;
    Rem() rem_aqm;

    action no_aqm() {
        p.common.algorithm = ALGO_NONE;
    }

    table aqm_config {
        key = { port: exact @name("port"); }
        actions = {
            droptail(p.common);
            red(p.common, p.red);
            red_ecn(p.common, p.red);
            ecnm(p.common, p.red);
            mecn(p.common, p.red);
            newque(p.common, p.newque);
            blue(p.common, p.blue);
            pi(p.common, p.pi);
            rem(p.common, p.rem);
            @defaultonly no_aqm;
        }
        const default_action = no_aqm();
        size = PORT_SLOTS;
    }

    apply {
        fresh = 0;
        fire = false;
        switch (aqm_config.apply().action_run) {
            droptail: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
            }
            red: red_ecn: ecnm: mecn: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
                red_aqm.apply(port, fresh, p.red, std_meta, rec, fire);
            }
            newque: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
                newque_aqm.apply(port, fresh, p.common, p.newque, std_meta, rec, fire);
            }
            blue: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
                blue_aqm.apply(port, fresh, p.blue, std_meta, arr_seq, rec, fire);
            }
            pi: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
                pi_aqm.apply(port, fresh, p.pi, std_meta, rec, fire);
            }
            rem: {
                start.apply(port, p.common, hdr, std_meta, rec, fresh);
                rem_aqm.apply(port, fresh, p.rem, std_meta, arr_seq, rec, fire);
            }
        }
    }
}

#endif
