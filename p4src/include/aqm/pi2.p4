#ifndef P4AQM_PI2_P4
#define P4AQM_PI2_P4

#include "pi_core.p4"

// PI2 (RFC 9332's base AQM) at dequeue, in one queue, or in DualPI2's two (dualpi2.p4: the
// same control with `dual` set): control_plane/algorithms/pi2.py says what it does, where
// BMv2 makes us differ from the RFC, and what each field below holds. The record's fields
// it writes, by the RFC's names:
#define PI2_QDELAY_OLD state0   // qdelay_old (USEC)
#define PI2_BASE_PROB state1    // p' (FRAC32)
#define PI2_QDELAY avg          // the delay its update used (USEC)
#define PI2_UPDATES count       // the updates it ran: 0, or 1 + those missed
#define PI2_CLASS group         // PI2_CLASSIC or PI2_L4S (the verdict counts per class)
// and prob (the packet's own probability), deq_qdepth, region, event.
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
// (red.p4 says why). PI2's parameters are read with PARAM: constants in a build for one
// configuration (lib.p4).
header pi2_h {
    PARAM_FIELD(pgain_t, alpha)           // P48 per USEC of delay
    PARAM_FIELD(pgain_t, beta)
    PARAM_FIELD(p48_t, alpha_target)      // alpha * target
    PARAM_FIELD(usec_t, tupdate)
    PARAM_FIELD(bit<32>, inv_tupdate)     // ceil(2^32 / tupdate)
    PARAM_FIELD(bit<8>, k)                // the coupling factor, a whole number
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
    bit<96>  up;         // alpha cur + beta cur + p', P48 widened
    // alpha target + beta qdelay_old; for the missed updates, beta qdelay_old + alpha target m
    bit<96>  down;
    bit<64>  coupled;    // p_CL = k p' (P48)
}

// The aqm_config actions, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them. PI2_CORE is
// PI2's and DualPI2's shared step (DUALPI2_ACTION).
#define PI2_CORE(ALPHA, BETA, ALPHA_TARGET, TUPDATE, INV_TUPDATE, K) \
    meta.aqm.pi2.setValid(); \
    SET_PARAM(meta.aqm.pi2, alpha, ALPHA) \
    SET_PARAM(meta.aqm.pi2, beta, BETA) \
    SET_PARAM(meta.aqm.pi2, alpha_target, ALPHA_TARGET) \
    SET_PARAM(meta.aqm.pi2, tupdate, TUPDATE) \
    SET_PARAM(meta.aqm.pi2, inv_tupdate, INV_TUPDATE) \
    SET_PARAM(meta.aqm.pi2, k, K)
#define PI2_ACTION \
    action pi2(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
               bit<2> ecn_mode, pgain_t alpha, pgain_t beta, p48_t alpha_target, \
               usec_t tupdate, bit<32> inv_tupdate, bit<8> k) { \
        aqm_common(PI2_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
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
#define PI2_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.pi2, std_meta, meta.rec);

// RFC 9332's update of p', when it is due: the change kept in [0, 1], then each update
// that found the queue(s) empty (qdelay 0), all at once: p' -= beta qdelay_old + alpha
// target missed (every step <= 0: clamping their sum at 0 equals clamping each).
control Pi2Update(inout pi2_h v,
                  inout aqm_record_h rec) {

    PiUpdate() pi_update;

    apply {
        rec.PI2_QDELAY = v.prev;
        pi_update.apply(PARAM(v, alpha), PARAM(v, beta), PARAM(v, alpha_target), v.prev,
                        rec.PI2_QDELAY_OLD, (bit<96>)v.prob, v.up, v.down);
        // Before the `if`s, in one stretch of code with the above: one table (defines.p4).
        rec.PI2_QDELAY_OLD = v.prev;
        rec.event = EVENT_UPDATE;
        rec.PI2_UPDATES = v.missed + 1;
        if (v.down >= v.up) {
            v.prob = 0;
        } else if (v.up - v.down >= (bit<96>)P48_ONE) {
            v.prob = P48_ONE;
        } else {
            v.prob = (p48_t)(v.up - v.down);
        }
        if (v.missed != 0) {
            v.down = (bit<96>)PARAM(v, beta) * (bit<96>)rec.PI2_QDELAY_OLD
                     + (bit<96>)PARAM(v, alpha_target) * (bit<96>)v.missed;
            if (v.down >= (bit<96>)v.prob) {
                v.prob = 0;
            } else {
                v.prob = v.prob - (p48_t)v.down;
            }
            rec.PI2_QDELAY_OLD = 0;
        }
    }
}

// The packet's signal (RFC 9332): a classic packet fires with p_C = p'^2 (the square by
// multiplication, 97 bits wide); an L4S one with p_CL = min(k p', 1), or (DualPI2) with 1
// when its own sojourn exceeds step_thresh and it found at least step_qlen packets in the
// L queue. Overload (RFC 9332 4.2.3): once k p' >= 1 a classic packet that fires is
// dropped even if ECN-capable, and an L4S packet is dropped with p'^2 and marked
// otherwise. Region A while its probability is above 0, B when the step marks it, FORCED
// when it fires in overload.
control Pi2Signal(in standard_metadata_t std_meta,
                  inout pi2_h v,
                  inout aqm_record_h rec) {
    apply {
        // p' for the record, p_C as the packet's probability (both FRAC32; an L4S packet's
        // below overload is set below) and p_CL. p' <= 1.0, and only p' = 1.0 takes p' and p_C past
        // FRAC32's range: one saturation for both (one condition, defines.p4).
        rec.PI2_BASE_PROB = (frac32_t)(v.prob >> 16);
        rec.prob = (frac32_t)(((bit<128>)v.prob * (bit<128>)v.prob) >> 64);
        v.coupled = v.prob * (bit<64>)PARAM(v, k);
        if (v.prob == P48_ONE) {
            rec.PI2_BASE_PROB = FRAC32_ONE;
            rec.prob = FRAC32_ONE;
        }
        if (rec.PI2_CLASS == PI2_CLASSIC) {
            if (rec.rnd < rec.prob) {
                rec.fire = 1;
                if (v.coupled >= P48_ONE) {
                    rec.region = REGION_FORCED;
                }
            }
        } else if (v.coupled >= P48_ONE) {
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
    }
}

control Pi2(in port_t index,
            inout pi2_h v,
            in standard_metadata_t std_meta,
            inout aqm_record_h rec) {

    PiCore() pi_core;
    Pi2Update() update;
    Pi2Signal() signal;
    register<p48_t, port_t>(PORT_SLOTS) base_prob_reg;
    register<usec_t, port_t>(PORT_SLOTS) qdelay_old_reg;
    register<usec_t, port_t>(PORT_SLOTS) prev_reg;

    action init() {
        v.prob = 0;
        rec.PI2_QDELAY_OLD = 0;
        v.prev = 0;
    }

    action store() {
        base_prob_reg.write(index, v.prob);
        qdelay_old_reg.write(index, rec.PI2_QDELAY_OLD);
        prev_reg.write(index, v.prev);
    }

    apply {
        // The port's state loaded, then the update clock's: statements, not an action, so
        // that p4c makes one table of them (an action called directly is a table of its own).
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
        base_prob_reg.read(v.prob, index);
        qdelay_old_reg.read(rec.PI2_QDELAY_OLD, index);
        prev_reg.read(v.prev, index);
        pi_core.apply(index, rec.fresh, std_meta, rec.deq_qdepth, PARAM(v, tupdate),
                      PARAM(v, inv_tupdate), v.cur, v.next, v.due, v.missed);
        if (rec.fresh == 1) {
            init();
        }
        // The packet's class: DualPI2, the queue it left (ingress classified it); PI2, its
        // ECN field: ECT(1) and CE are L4S (RFC 9331).
#ifdef P4AQM_WITH_PRIORITY_QUEUES
        if (v.dual != PI2_ONE_QUEUE) {
            if (std_meta.priority == 1) {
                rec.PI2_CLASS = PI2_L4S;
            }
        } else
#endif
        if (rec.ecn_in[0:0] == 1) {
            rec.PI2_CLASS = PI2_L4S;
        }
        if (v.due == 1) {
            update.apply(v, rec);
        }
        // DualPI2: only the classic queue's delay drives p'.
#ifdef P4AQM_WITH_PRIORITY_QUEUES
        if (v.dual == PI2_ONE_QUEUE || rec.PI2_CLASS == PI2_CLASSIC)
#endif
        {
            v.prev = v.cur;
        }
        signal.apply(std_meta, v, rec);
        store();
    }
}

#endif
