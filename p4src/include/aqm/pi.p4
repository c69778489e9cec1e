#ifndef P4AQM_PI_P4
#define P4AQM_PI_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// PI (Hollot et al. 2001, control_plane/algorithms/pi.py): every interval (1/170 s),
//   p += a (q - qref) - b (q_old - qref),  clamped to [0, 1]
// with q the queue now (deq_qdepth: what the departing packet leaves behind). The first
// packet to depart after a boundary runs the update. No packet departs during an interval
// only if the queue was empty throughout it, so each interval missed that way is the update
// with q = 0 (its sum, -b q_old - (a - b) qref per missed interval, is applied at once:
// every term is <= 0 since a >= b, so clamping the sum equals clamping each step).
// The change is the difference of two non-negative sums in P48:
//   up = a q + b qref,  down = a qref + b q_old  (a qref, b qref, (a - b) qref: action data)
// Every packet is marked (ECT) or dropped (Not-ECT) with p.
const bit<8> ALGO_PI = 5;

struct pi_params_t {
    gain48_t a;
    gain48_t b;
    p48_t    a_qref;
    p48_t    b_qref;
    p48_t    idle_step;     // (a - b) qref: one missed interval
    usec_t   interval;
    bit<32>  inv_interval;  // ceil(2^32 / interval)
}

action pi(inout aqm_common_t c, inout pi_params_t p, bit<16> epoch_id,
          bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, bit<2> ecn_mode,
          gain48_t a, gain48_t b, p48_t a_qref, p48_t b_qref, p48_t idle_step,
          usec_t interval, bit<32> inv_interval) {
    aqm_common(c, ALGO_PI, ecn_mode, limit, epoch_id, prng_seed, use_bmv2_random);
    p.a = a;
    p.b = b;
    p.a_qref = a_qref;
    p.b_qref = b_qref;
    p.idle_step = idle_step;
    p.interval = interval;
    p.inv_interval = inv_interval;
}

// record: prob = p (FRAC32), state0 = q_old (packets), state1 = intervals this packet
// closed (0, or 1 + missed), event = EVENT_UPDATE when it ran the update.
control Pi(in port_t port,
           in bit<1> fresh,
           in pi_params_t p,
           in standard_metadata_t std_meta,
           inout aqm_record_t rec,
           out bool fire) {

    IntervalClock() clock;
    register<p48_t>(PORT_SLOTS) prob_reg;
    register<bit<32>>(PORT_SLOTS) q_old_reg;

    apply {
        p48_t prob;
        bit<32> q_old;
        prob_reg.read(prob, (bit<32>)port);
        q_old_reg.read(q_old, (bit<32>)port);
        if (fresh == 1) {
            prob = 0;
            q_old = 0;
        }
        bool due;
        bit<32> missed;
        clock.apply(port, fresh, std_meta.egress_global_timestamp, p.interval, p.inv_interval,
                    due, missed);
        if (due) {
            if (missed != 0) {
                bit<96> idle = (bit<96>)p.b * (bit<96>)q_old
                               + (bit<96>)p.idle_step * (bit<96>)missed;
                if (idle >= (bit<96>)prob) {
                    prob = 0;
                } else {
                    prob = prob - (p48_t)idle;
                }
                q_old = 0;
            }
            bit<32> q = (bit<32>)std_meta.deq_qdepth;
            rec.deq_qdepth = q;
            p48_t up = p.a * (p48_t)q + p.b_qref;
            p48_t down = p.a_qref + p.b * (p48_t)q_old;
            prob = prob + up;
            if (down >= prob) {
                prob = 0;
            } else {
                prob = prob - down;
            }
            if (prob > P48_ONE) {
                prob = P48_ONE;
            }
            q_old = q;
            prob_reg.write((bit<32>)port, prob);
            q_old_reg.write((bit<32>)port, q_old);
            rec.event = EVENT_UPDATE;
            rec.state1 = missed + 1;
        } else if (fresh == 1) {
            prob_reg.write((bit<32>)port, prob);
            q_old_reg.write((bit<32>)port, q_old);
        }

        bit<64> p32 = prob >> 16;
        if (p32 > (bit<64>)FRAC32_ONE) {
            p32 = (bit<64>)FRAC32_ONE;
        }
        rec.prob = (frac32_t)p32;
        rec.region = REGION_NONE;
        if (rec.prob != 0) {
            rec.region = REGION_A;
        }
        fire = rec.rnd < rec.prob;
        rec.state0 = q_old;
    }
}

#endif
