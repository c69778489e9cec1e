#ifndef P4AQM_PIE_P4
#define P4AQM_PIE_P4

#include "pi_core.p4"

// PIE (RFC 8033) at dequeue: control_plane/algorithms/pie.py says what it does, where
// BMv2 makes us differ from the RFC, and what each field below holds. The record's fields
// it writes, by the RFC's names:
#define PIE_QDELAY_OLD state0        // qdelay_old (USEC)
#define PIE_BURST_ALLOWANCE state1   // burst_allowance (USEC)
#define PIE_QDELAY avg               // the current_qdelay its update used (USEC)
#define PIE_UPDATES count            // the updates it ran: 0, or 1 + those missed
// and prob (drop_prob, FRAC32), deq_qdepth, region, event.
// The auto-scaling bands (P48, rounded up: p < band is the RFC's p < 10^-k).
const p48_t PIE_BAND_6 = 281474977;          // 1e-6
const p48_t PIE_BAND_5 = 2814749768;         // 1e-5
const p48_t PIE_BAND_4 = 28147497672;        // 1e-4
const p48_t PIE_BAND_3 = 281474976711;       // 1e-3
const p48_t PIE_BAND_2 = 2814749767107;      // 0.01
const p48_t PIE_BAND_1 = 28147497671066;     // 0.1
const p48_t PIE_SAFE_P = 56294995342132;     // 0.2: below it (and a low delay) no drop
const bit<64> PIE_DERAND_LOW = 239253730204058;    // 0.85 (P48)
const bit<64> PIE_DERAND_HIGH = 2392537302040576;  // 8.5 (P48)

// A port's PIE parameters and the control's working values: one header (red.p4 says why).
// The parameters are read with PARAM: constants in a build for one configuration (lib.p4).
header pie_h {
    PARAM_FIELD(pgain_t, alpha)         // P48 per USEC of delay
    PARAM_FIELD(pgain_t, beta)
    PARAM_FIELD(p48_t, alpha_target)    // alpha * target
    PARAM_FIELD(usec_t, half_target)    // target / 2
    PARAM_FIELD(usec_t, tupdate)
    PARAM_FIELD(bit<32>, inv_tupdate)   // ceil(2^32 / tupdate)
    PARAM_FIELD(usec_t, max_burst)
    PARAM_FIELD(p48_t, mark_ecnth)
    PARAM_FIELD(frac32_t, decay)        // 0.98
    PARAM_FIELD(p48_t, cap)             // the capped increase, or 1.0 (no cap)
    PARAM_FIELD(bit<32>, min_backlog)   // PKTS
    PARAM_FIELD(bit<8>, derandomize)
    // The control's
    bit<48> next;          // the next update (IntervalClock)
    bit<32> missed;        // boundaries that passed without a departure
    bit<8>  due;           // this packet runs the update
    p48_t   prob;          // drop_prob
    usec_t  cur;           // this packet's current_qdelay
    usec_t  prev;          // the packet before it's (the update's current_qdelay)
    bit<96> up;            // alpha cur + beta cur, P48 widened
    bit<96> down;          // alpha target + beta qdelay_old
    bit<96> step;
    bit<8>  shift;         // the auto-scaling band's
    bit<64> accu;          // accu_prob: p accumulated since the last signal (P48)
    bit<64> t;             // the idle orbit's position, steps * 2^16
    bit<16> bucket;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define PIE_ACTION \
    action pie(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
               bit<2> ecn_mode, pgain_t alpha, pgain_t beta, p48_t alpha_target, \
               usec_t half_target, usec_t tupdate, bit<32> inv_tupdate, usec_t max_burst, \
               p48_t mark_ecnth, frac32_t decay, p48_t cap, bit<32> min_backlog, \
               bit<8> derandomize) { \
        aqm_common(PIE_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.pie.setValid(); \
        SET_PARAM(meta.aqm.pie, alpha, alpha) \
        SET_PARAM(meta.aqm.pie, beta, beta) \
        SET_PARAM(meta.aqm.pie, alpha_target, alpha_target) \
        SET_PARAM(meta.aqm.pie, half_target, half_target) \
        SET_PARAM(meta.aqm.pie, tupdate, tupdate) \
        SET_PARAM(meta.aqm.pie, inv_tupdate, inv_tupdate) \
        SET_PARAM(meta.aqm.pie, max_burst, max_burst) \
        SET_PARAM(meta.aqm.pie, mark_ecnth, mark_ecnth) \
        SET_PARAM(meta.aqm.pie, decay, decay) \
        SET_PARAM(meta.aqm.pie, cap, cap) \
        SET_PARAM(meta.aqm.pie, min_backlog, min_backlog) \
        SET_PARAM(meta.aqm.pie, derandomize, derandomize) \
    }

// How AqmDispatch applies the control.
#define PIE_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.pie, std_meta, meta.rec);

// Updates that found the queue empty (cur = qdelay_old = 0), `missed` of them at once: p
// moves that many points along the orbit of p under idle updates (control_plane/
// algorithms/pie.py), found between two of its points (pie_idle_from) and interpolated
// (pie_idle_to); each takes one tupdate of burst allowance.
control PieIdleUpdates(in port_t index,
                       inout pie_h v,
                       inout aqm_record_h rec) {

    action orbit_position(bit<32> steps, p48_t top, bit<64> gain) {
        v.t = ((bit<64>)steps << 16)
              + (bit<64>)(((bit<96>)(top - v.prob) * (bit<96>)gain) >> 32);
    }

    table pie_idle_from {
        key = {
            index: exact @name("port");
            v.prob: range @name("bucket");
        }
        actions = { orbit_position; @defaultonly NoAction; }
        const default_action = NoAction();
        size = LOOKUP_ENTRIES;
    }

    action orbit_point(p48_t start, p48_t drop) {
        v.prob = start - (p48_t)(((bit<96>)drop * (bit<96>)(v.t & 0xffff)) >> 16);
    }

    action past_orbit() {
        v.prob = 0;
    }

    table pie_idle_to {
        key = {
            index: exact @name("port");
            v.bucket: exact @name("bucket");
        }
        actions = { orbit_point; @defaultonly past_orbit; }
        const default_action = past_orbit();
        size = LOOKUP_ENTRIES;
    }

    apply {
        rec.PIE_QDELAY_OLD = 0;
        if (v.prob != 0) {
            pie_idle_from.apply();
            v.t = v.t + ((bit<64>)v.missed << 16);
            if (v.t >= ((bit<64>)BUCKET_MAX << 16)) {
                v.bucket = BUCKET_MAX;
            } else {
                v.bucket = (bit<16>)(v.t >> 16);
            }
            pie_idle_to.apply();
        }
        v.up = (bit<96>)PARAM(v, tupdate) * (bit<96>)v.missed;
        if ((bit<96>)rec.PIE_BURST_ALLOWANCE > v.up) {
            rec.PIE_BURST_ALLOWANCE = rec.PIE_BURST_ALLOWANCE - (bit<32>)v.up;
        } else {
            rec.PIE_BURST_ALLOWANCE = 0;
        }
    }
}

// RFC 8033's calculate_drop_prob, when the update is due.
control PieCalculateDropProb(in port_t index,
                             inout pie_h v,
                             inout aqm_record_h rec) {

    PiUpdate() pi_update;
    PieIdleUpdates() idle_updates;

    apply {
        rec.PIE_QDELAY = v.prev;
        pi_update.apply(PARAM(v, alpha), PARAM(v, beta), PARAM(v, alpha_target), v.prev,
                        rec.PIE_QDELAY_OLD, 0, v.up, v.down);
        // Before the `if`s, in one stretch of code with the above: one table (defines.p4).
        rec.event = EVENT_UPDATE;
        rec.PIE_UPDATES = v.missed + 1;
        // Auto-tuning (RFC 8033 4.2): the change scaled down by p's band.
        if (v.prob < PIE_BAND_6) {
            v.shift = 11;
        } else if (v.prob < PIE_BAND_5) {
            v.shift = 9;
        } else if (v.prob < PIE_BAND_4) {
            v.shift = 7;
        } else if (v.prob < PIE_BAND_3) {
            v.shift = 5;
        } else if (v.prob < PIE_BAND_2) {
            v.shift = 3;
        } else if (v.prob < PIE_BAND_1) {
            v.shift = 1;
        }
        if (v.up >= v.down) {
            // An increase, capped at `cap` once p >= 0.1 (RFC 8033 5.5), p at most 1.
            v.step = (v.up - v.down) >> v.shift;
            if (v.prob >= PIE_BAND_1 && v.step > (bit<96>)PARAM(v, cap)) {
                v.step = (bit<96>)PARAM(v, cap);
            }
            v.step = v.step + (bit<96>)v.prob;
            if (v.step > (bit<96>)P48_ONE) {
                v.step = (bit<96>)P48_ONE;
            }
            v.prob = (p48_t)v.step;
        } else {
            v.step = (v.down - v.up) >> v.shift;
            if (v.step >= (bit<96>)v.prob) {
                v.prob = 0;
            } else {
                v.prob = v.prob - (p48_t)v.step;
            }
        }
        // The queue was idle: p decays.
        if (v.prev == 0 && rec.PIE_QDELAY_OLD == 0) {
            v.prob = (p48_t)(((bit<96>)v.prob * (bit<96>)PARAM(v, decay)) >> 32);
        }
        rec.PIE_QDELAY_OLD = v.prev;
        if (rec.PIE_BURST_ALLOWANCE > PARAM(v, tupdate)) {
            rec.PIE_BURST_ALLOWANCE = rec.PIE_BURST_ALLOWANCE - PARAM(v, tupdate);
        } else {
            rec.PIE_BURST_ALLOWANCE = 0;
        }
        if (v.missed != 0) {
            idle_updates.apply(index, v, rec);
        }
    }
}

// RFC 8033's drop_early: no signal while the burst allowance lasts, nor when the delay is
// low and p too (qdelay_old < target / 2 and p < 0.2), nor when the packet found at most
// min_backlog packets queued; else the packet fires with p, or derandomised (RFC 8033
// 5.4: the accumulated p below 0.85 never, at 8.5 or more always). In an ECN mode an
// ECN-capable packet is marked while p <= mark_ecnth and dropped above (region FORCED).
control PieDropEarly(in standard_metadata_t std_meta,
                     inout pie_h v,
                     inout aqm_record_h rec) {
    apply {
        if (rec.PIE_BURST_ALLOWANCE == 0
                && !(rec.PIE_QDELAY_OLD < PARAM(v, half_target) && v.prob < PIE_SAFE_P)
                && (bit<32>)std_meta.enq_qdepth > PARAM(v, min_backlog)) {
            if (PARAM(v, derandomize) == 0) {
                if (rec.rnd < rec.prob) {
                    rec.fire = 1;
                }
            } else if (v.prob == 0) {
                v.accu = 0;
            } else {
                v.accu = v.accu + v.prob;
                if (v.accu >= PIE_DERAND_HIGH) {
                    rec.fire = 1;
                } else if (v.accu >= PIE_DERAND_LOW && rec.rnd < rec.prob) {
                    rec.fire = 1;
                }
            }
            if (rec.fire == 1) {
                v.accu = 0;
                if (rec.ecn_mode != ECN_MODE_DROP && rec.ecn_in != (bit<8>)ECN_NOT_ECT
                        && v.prob > PARAM(v, mark_ecnth)) {
                    rec.region = REGION_FORCED;
                }
            }
        }
    }
}

control Pie(in port_t index,
            inout pie_h v,
            in standard_metadata_t std_meta,
            inout aqm_record_h rec) {

    PiCore() pi_core;
    PieCalculateDropProb() calculate_drop_prob;
    PieDropEarly() drop_early;
    register<p48_t, port_t>(PORT_SLOTS) drop_prob_reg;
    register<usec_t, port_t>(PORT_SLOTS) qdelay_old_reg;
    register<usec_t, port_t>(PORT_SLOTS) prev_reg;
    register<usec_t, port_t>(PORT_SLOTS) burst_allowance_reg;
    register<bit<64>, port_t>(PORT_SLOTS) accu_prob_reg;

    action init() {
        v.prob = 0;
        rec.PIE_QDELAY_OLD = 0;
        v.prev = 0;
        rec.PIE_BURST_ALLOWANCE = PARAM(v, max_burst);
        v.accu = 0;
    }

    action store() {
        drop_prob_reg.write(index, v.prob);
        qdelay_old_reg.write(index, rec.PIE_QDELAY_OLD);
        prev_reg.write(index, v.cur);
        burst_allowance_reg.write(index, rec.PIE_BURST_ALLOWANCE);
        accu_prob_reg.write(index, v.accu);
    }

    apply {
        // The port's state loaded, then the update clock's: statements, not an action, so
        // that p4c makes one table of them (an action called directly is a table of its own).
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
        drop_prob_reg.read(v.prob, index);
        qdelay_old_reg.read(rec.PIE_QDELAY_OLD, index);
        prev_reg.read(v.prev, index);
        burst_allowance_reg.read(rec.PIE_BURST_ALLOWANCE, index);
        accu_prob_reg.read(v.accu, index);
        pi_core.apply(index, rec.fresh, std_meta, rec.deq_qdepth, PARAM(v, tupdate),
                      PARAM(v, inv_tupdate), v.cur, v.next, v.due, v.missed);
        if (rec.fresh == 1) {
            init();
        }
        if (v.due == 1) {
            calculate_drop_prob.apply(index, v, rec);
        }
        // The burst allowance refilled once p is 0 and both delays are low.
        if (v.prob == 0 && v.cur < PARAM(v, half_target)
                && rec.PIE_QDELAY_OLD < PARAM(v, half_target)) {
            rec.PIE_BURST_ALLOWANCE = PARAM(v, max_burst);
        }
        // p in FRAC32, saturated: p <= 1.0, and only 1.0 is past FRAC32's range.
        rec.prob = (frac32_t)(v.prob >> 16);
        if (v.prob == P48_ONE) {
            rec.prob = FRAC32_ONE;
        }
        if (rec.prob != 0) {
            rec.region = REGION_A;
        }
        drop_early.apply(std_meta, v, rec);
        store();
    }
}

#endif
