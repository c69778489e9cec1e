#ifndef P4AQM_PI2_P4
#define P4AQM_PI2_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// PI2 (RFC 9332's base AQM, control_plane/algorithms/pi2.py) at dequeue, in one queue, or
// in DualPI2's two (dualpi2.p4: the same control with `dual` set). Every tupdate the base
// probability p' moves by
//   alpha (cur - target) + beta (cur - qdelay_old),   kept in [0, 1]
// with cur the delay of the packet before the one that runs the update: each departing
// packet's sojourn, 0 when it leaves its queue empty (DualPI2: classic packets' only, the
// classic queue's delay drives p'). The first packet to depart at or after a boundary runs
// the update; boundaries that passed without a departure found the queue(s) empty, so each
// is the update with cur = 0, all of them at once:
//   p' -= beta qdelay_old + alpha target * missed   (every step <= 0: clamping their sum
// at 0 equals clamping each). Then the packet's class: ECT(1) and CE are L4S (RFC 9331),
// Not-ECT and ECT(0) classic (DualPI2: the queue ingress put it in, by the same rule).
// Classic packets fire with p'^2 (the square by multiplication, 97 bits wide); L4S packets
// with min(k p', 1), or (DualPI2) with 1 when their own sojourn exceeds step_thresh and
// they found at least step_qlen packets in the L queue. Overload (RFC 9332 4.2.3): once
// k p' >= 1 a classic packet that fires is dropped even if ECN-capable, and an L4S packet
// is dropped with p'^2 and marked otherwise.
const bit<8> PI2_CLASSIC = 0;
const bit<8> PI2_L4S = 1;
// pi2_h.dual: one queue, DualPI2 sharing the port's rate (dualpi2.p4's charge), DualPI2 on
// BMv2's two queues as they are (each paced at its own rate).
const bit<8> PI2_ONE_QUEUE = 0;
const bit<8> PI2_DUAL_CHARGED = 1;
const bit<8> PI2_DUAL_PACED = 2;
// A sojourn is never above it: PI2 in one queue has no step.
const usec_t PI2_NO_STEP = 0xffffffff;

// A port's PI2 or DualPI2 parameters and the control's working values: one header
// (red.p4 says why).
header pi2_h {
    pgain_t alpha;           // P48 per USEC of delay
    pgain_t beta;
    p48_t   alpha_target;    // alpha * target
    usec_t  tupdate;
    bit<32> inv_tupdate;     // ceil(2^32 / tupdate)
    bit<8>  k;               // the coupling factor, a whole number
#ifdef P4AQM_WITH_PRIORITY_QUEUES
    bit<8>  dual;            // PI2_ONE_QUEUE, or DualPI2 (dualpi2.p4): the fields below
    usec_t  step_thresh;
    bit<32> step_qlen;       // PKTS
    bit<32> charge_session;  // the L queue's departures charged to the classic queue
    bit<32> charge_export_session;   // the same, with the telemetry record
#endif
    // The control's
    bit<48>  next;       // the next update (IntervalClock)
    bit<32>  missed;     // boundaries that passed without a departure
    bit<8>   due;        // this packet runs the update
    p48_t    prob;       // p'
    usec_t   cur;        // this packet's delay (0: it left its queue empty)
    usec_t   prev;       // the delay the next update uses
    bit<96>  up;         // alpha cur + beta cur, P48 widened
    // alpha target + beta qdelay_old; for the missed updates, beta qdelay_old + alpha target m
    bit<96>  down;
    bit<64>  coupled;    // k p' (P48)
    bit<64>  classic;    // p'^2 (FRAC32, saturated)
}

// The aqm_config actions, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them. PI2_CORE is
// PI2's and DualPI2's shared step (DUALPI2_ACTION).
#define PI2_CORE(ALPHA, BETA, ALPHA_TARGET, TUPDATE, INV_TUPDATE, K) \
    meta.aqm.pi2.setValid(); \
    meta.aqm.pi2.alpha = ALPHA; \
    meta.aqm.pi2.beta = BETA; \
    meta.aqm.pi2.alpha_target = ALPHA_TARGET; \
    meta.aqm.pi2.tupdate = TUPDATE; \
    meta.aqm.pi2.inv_tupdate = INV_TUPDATE; \
    meta.aqm.pi2.k = K;
#define PI2_ACTION \
    action pi2(bit<16> epoch_id, bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, \
               bit<2> ecn_mode, pgain_t alpha, pgain_t beta, p48_t alpha_target, \
               usec_t tupdate, bit<32> inv_tupdate, bit<8> k) { \
        aqm_common(PI2_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed, \
                   use_bmv2_random); \
        PI2_CORE(alpha, beta, alpha_target, tupdate, inv_tupdate, k) \
        PI2_NO_STEP_ACTION \
    }
// Without DualPI2 in the profile PI2 has no step (nor the field).
#ifdef P4AQM_WITH_PRIORITY_QUEUES
#define PI2_NO_STEP_ACTION meta.aqm.pi2.step_thresh = PI2_NO_STEP;
#else
#define PI2_NO_STEP_ACTION
#endif

// How AqmDispatch applies the control.
#define PI2_APPLY(INSTANCE) INSTANCE.apply(meta.port_index, meta.aqm.pi2, std_meta, meta.rec);

// record: prob = the packet's probability (FRAC32: p'^2 for a classic packet, min(k p', 1)
// for an L4S one, 1 when the step marks it, its drop probability p'^2 in overload), state0 =
// qdelay_old (USEC), state1 = p' (FRAC32), group = the packet's class (PI2_CLASSIC,
// PI2_L4S: the verdict counts marks and drops per class), count = boundaries this packet
// closed (0, or 1 + missed), avg = the delay its update used (USEC), event = EVENT_UPDATE
// when it ran one, deq_qdepth; region = A while its probability is above 0, B when the
// step marks it, FORCED when it fires in overload.
control Pi2(in bit<32> index,
            inout pi2_h v,
            in standard_metadata_t std_meta,
            inout aqm_record_h rec) {

    IntervalClock() clock;
    register<p48_t>(PORT_SLOTS) prob_reg;
    register<usec_t>(PORT_SLOTS) old_reg;
    register<usec_t>(PORT_SLOTS) prev_reg;

    action load() {
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
        prob_reg.read(v.prob, index);
        old_reg.read(rec.state0, index);
        prev_reg.read(v.prev, index);
    }

    action store() {
        prob_reg.write(index, v.prob);
        old_reg.write(index, rec.state0);
        prev_reg.write(index, v.prev);
    }

    apply {
        load();
        if (rec.fresh == 1) {
            v.prob = 0;
            rec.state0 = 0;
            v.prev = 0;
        }
        // DualPI2: the queue the packet left (ingress classified it); PI2: its ECN field.
#ifdef P4AQM_WITH_PRIORITY_QUEUES
        if (v.dual != PI2_ONE_QUEUE) {
            if (std_meta.priority == 1) {
                rec.group = PI2_L4S;
            }
        } else
#endif
        if (rec.ecn_in[0:0] == 1) {     // ECT(1) or CE
            rec.group = PI2_L4S;
        }
        if (rec.deq_qdepth != 0) {
            v.cur = std_meta.deq_timedelta;
        }
        clock.apply(index, rec.fresh, std_meta.egress_global_timestamp, v.tupdate,
                    v.inv_tupdate, v.next, v.due, v.missed);
        if (v.due == 1) {
            rec.avg = v.prev;
            v.up = (bit<96>)v.alpha * (bit<96>)v.prev + (bit<96>)v.beta * (bit<96>)v.prev
                   + (bit<96>)v.prob;
            v.down = (bit<96>)v.alpha_target + (bit<96>)v.beta * (bit<96>)rec.state0;
            if (v.down >= v.up) {
                v.prob = 0;
            } else if (v.up - v.down >= (bit<96>)P48_ONE) {
                v.prob = P48_ONE;
            } else {
                v.prob = (p48_t)(v.up - v.down);
            }
            rec.state0 = v.prev;
            if (v.missed != 0) {
                v.down = (bit<96>)v.beta * (bit<96>)rec.state0
                         + (bit<96>)v.alpha_target * (bit<96>)v.missed;
                if (v.down >= (bit<96>)v.prob) {
                    v.prob = 0;
                } else {
                    v.prob = v.prob - (p48_t)v.down;
                }
                rec.state0 = 0;
            }
            rec.event = EVENT_UPDATE;
            rec.count = v.missed + 1;
        }
#ifdef P4AQM_WITH_PRIORITY_QUEUES
        if (v.dual == PI2_ONE_QUEUE || rec.group == PI2_CLASSIC)
#endif
        {
            v.prev = v.cur;
        }

        v.classic = (bit<64>)(((bit<128>)v.prob * (bit<128>)v.prob) >> 64);
        if (v.classic > (bit<64>)FRAC32_ONE) {
            v.classic = (bit<64>)FRAC32_ONE;
        }
        v.coupled = v.prob * (bit<64>)v.k;
        if (rec.group == PI2_CLASSIC) {
            rec.prob = (frac32_t)v.classic;
            if (rec.rnd < rec.prob) {
                rec.fire = 1;
                if (v.coupled >= P48_ONE) {
                    rec.region = REGION_FORCED;
                }
            }
        } else if (v.coupled >= P48_ONE) {
            rec.prob = (frac32_t)v.classic;
            rec.fire = 1;
            if (rec.rnd < rec.prob) {
                rec.region = REGION_FORCED;
            }
        } else {
            rec.prob = (frac32_t)(v.coupled >> 16);
#ifdef P4AQM_WITH_PRIORITY_QUEUES
            if (std_meta.deq_timedelta > v.step_thresh
                    && (bit<32>)std_meta.enq_qdepth >= v.step_qlen) {
                rec.prob = FRAC32_ONE;
                rec.region = REGION_B;
                rec.fire = 1;
            } else
#endif
            if (rec.rnd < rec.prob) {
                rec.fire = 1;
            }
        }
        if (rec.region == REGION_NONE && rec.prob != 0) {
            rec.region = REGION_A;
        }
        // p' in FRAC32, saturated: p' <= 1.0, and only 1.0 is past FRAC32's range.
        rec.state1 = (frac32_t)(v.prob >> 16);
        if (v.prob == P48_ONE) {
            rec.state1 = FRAC32_ONE;
        }
        store();
    }
}

#endif
