#ifndef P4AQM_PI_P4
#define P4AQM_PI_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// PI (Hollot et al. 2001): control_plane/algorithms/pi.py says what it does, where BMv2
// makes us differ from the paper, and what each field below holds. The record's fields it
// writes, by the paper's names:
#define PI_Q_OLD state0     // q_old (packets)
#define PI_UPDATES state1   // the updates it ran: 0, or 1 + those missed
// and prob (p, FRAC32), deq_qdepth (the q it used), region, event.

// A port's PI parameters and the control's working values: one header (red.p4 says why).
header pi_h {
    gain48_t a;
    gain48_t b;
    p48_t    a_qref;
    p48_t    b_qref;
    p48_t    idle_step;     // (a - b) qref: one missed interval
    usec_t   interval;
    bit<32>  inv_interval;  // ceil(2^32 / interval)
    // The control's
    bit<48> next;          // the next update (IntervalClock)
    bit<32> missed;        // intervals that passed without a packet
    bit<8>  due;           // this packet runs the update
    p48_t   prob;
    bit<96> idle;          // the missed intervals' decrease, P48 widened
    p48_t   down;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define PI_ACTION \
    action pi(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
              bit<2> ecn_mode, gain48_t a, gain48_t b, p48_t a_qref, p48_t b_qref, \
              p48_t idle_step, usec_t interval, bit<32> inv_interval) { \
        aqm_common(PI_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.pi.setValid(); \
        meta.aqm.pi.a = a; \
        meta.aqm.pi.b = b; \
        meta.aqm.pi.a_qref = a_qref; \
        meta.aqm.pi.b_qref = b_qref; \
        meta.aqm.pi.idle_step = idle_step; \
        meta.aqm.pi.interval = interval; \
        meta.aqm.pi.inv_interval = inv_interval; \
    }

// How AqmDispatch applies the control.
#define PI_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.pi, std_meta, meta.rec);

control Pi(in port_t index,
           inout pi_h v,
           in standard_metadata_t std_meta,
           inout aqm_record_h rec) {

    IntervalClock() clock;
    register<p48_t, port_t>(PORT_SLOTS) p_reg;
    register<bit<32>, port_t>(PORT_SLOTS) q_old_reg;

    action load() {
        p_reg.read(v.prob, index);
        q_old_reg.read(rec.PI_Q_OLD, index);
    }

    action init() {
        v.prob = 0;
        rec.PI_Q_OLD = 0;
    }

    action store() {
        p_reg.write(index, v.prob);
        q_old_reg.write(index, rec.PI_Q_OLD);
    }

    // q, the queue the departing packet leaves behind. (An action: p4c does not propagate
    // the cast into the register call, a temporary.)
    action sample_queue() {
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
    }

    action updated() {
        rec.PI_Q_OLD = rec.deq_qdepth;
        store();
        rec.event = EVENT_UPDATE;
        rec.PI_UPDATES = v.missed + 1;
    }

    apply {
        load();
        if (rec.fresh == 1) {
            init();
        }
        clock.apply(index, rec.fresh, std_meta.egress_global_timestamp, v.interval,
                    v.inv_interval, v.next, v.due, v.missed);
        if (v.due == 1) {
            // The intervals no packet departed in: updates with q = 0, at once.
            if (v.missed != 0) {
                v.idle = (bit<96>)v.b * (bit<96>)rec.PI_Q_OLD
                         + (bit<96>)v.idle_step * (bit<96>)v.missed;
                if (v.idle >= (bit<96>)v.prob) {
                    v.prob = 0;
                } else {
                    v.prob = v.prob - (p48_t)v.idle;
                }
                rec.PI_Q_OLD = 0;
            }
            // p += a (q - qref) - b (q_old - qref), in [0, 1].
            sample_queue();
            v.down = v.a_qref + v.b * (p48_t)rec.PI_Q_OLD;
            v.prob = v.prob + v.a * (p48_t)rec.deq_qdepth + v.b_qref;
            if (v.down >= v.prob) {
                v.prob = 0;
            } else {
                v.prob = v.prob - v.down;
            }
            if (v.prob > P48_ONE) {
                v.prob = P48_ONE;
            }
            updated();
        } else if (rec.fresh == 1) {
            store();
        }

        // Every packet is marked (ECT) or dropped (Not-ECT) with p: in FRAC32, saturated
        // (p <= 1.0, and only 1.0 is past FRAC32's range).
        rec.prob = (frac32_t)(v.prob >> 16);
        if (v.prob == P48_ONE) {
            rec.prob = FRAC32_ONE;
        }
        if (rec.prob != 0) {
            rec.region = REGION_A;
        }
        if (rec.rnd < rec.prob) {
            rec.fire = 1;
        }
    }
}

#endif
