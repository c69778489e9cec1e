#ifndef P4AQM_BLUE_P4
#define P4AQM_BLUE_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// BLUE (Feng et al. 2002, control_plane/algorithms/blue.py): one marking probability pm
// driven by events, each change at most once per freeze_time:
//   loss event: pm += d1      a packet found `threshold` or more queued (threshold = limit:
//                             an overflow at the limit), or BMv2 dropped packets of this
//                             port at a full queue since the last one left (a gap in the
//                             arrival numbers ingress stamps)
//   link idle:  pm -= d2      a packet found the queue empty
// Every packet is marked (ECT) or dropped (Not-ECT) with pm.
const bit<8> ALGO_BLUE = 4;

struct blue_params_t {
    frac32_t d1;
    frac32_t d2;
    usec_t   freeze_time;
    bit<32>  threshold;
}

action blue(inout aqm_common_t c, inout blue_params_t p, bit<16> epoch_id,
            bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, bit<2> ecn_mode,
            frac32_t d1, frac32_t d2, usec_t freeze_time, bit<32> threshold) {
    aqm_common(c, ALGO_BLUE, ecn_mode, limit, epoch_id, prng_seed, use_bmv2_random);
    p.d1 = d1;
    p.d2 = d2;
    p.freeze_time = freeze_time;
    p.threshold = threshold;
}

// record: prob = pm (FRAC32), state0 = packets BMv2 dropped before this one (the gap),
// event = the change to pm.
control Blue(in port_t port,
             in bit<1> fresh,
             in blue_params_t p,
             in standard_metadata_t std_meta,
             in bit<32> arr_seq,
             inout aqm_record_t rec,
             out bool fire) {

    register<frac32_t>(PORT_SLOTS) prob_reg;
    register<bit<48>>(PORT_SLOTS) last_change_reg;
    register<bit<32>>(PORT_SLOTS) last_seq_reg;

    apply {
        frac32_t prob;
        bit<48> last_change;
        bit<32> last_seq;
        prob_reg.read(prob, (bit<32>)port);
        last_change_reg.read(last_change, (bit<32>)port);
        last_seq_reg.read(last_seq, (bit<32>)port);
        if (fresh == 1) {
            prob = 0;
            last_change = 0;
            last_seq = arr_seq - 1;
        }
        bit<32> lost = arr_seq - last_seq - 1;
        bit<48> arrival = std_meta.egress_global_timestamp - (bit<48>)std_meta.deq_timedelta;
        bool due = elapsed_since(last_change, arrival) > (bit<48>)p.freeze_time;

        if (lost != 0 || (bit<32>)std_meta.enq_qdepth >= p.threshold) {
            rec.event = EVENT_HELD;
            if (due) {
                prob = frac32_add(prob, p.d1);
                last_change = arrival;
                rec.event = EVENT_INCREASE;
            }
        } else if (std_meta.enq_qdepth == 0) {
            rec.event = EVENT_HELD;
            if (due) {
                prob = frac32_sub(prob, p.d2);
                last_change = arrival;
                rec.event = EVENT_DECREASE;
            }
        }
        prob_reg.write((bit<32>)port, prob);
        last_change_reg.write((bit<32>)port, last_change);
        last_seq_reg.write((bit<32>)port, arr_seq);

        rec.arr_seq = arr_seq;
        rec.region = REGION_NONE;
        if (prob != 0) {
            rec.region = REGION_A;
        }
        fire = rec.rnd < prob;
        rec.prob = prob;
        rec.state0 = lost;
    }
}

#endif
