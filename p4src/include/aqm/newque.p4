#ifndef P4AQM_NEWQUE_P4
#define P4AQM_NEWQUE_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// NEWQUE (seed 003), a rate-based AQM: control_plane/algorithms/newque.py says what it
// does, where BMv2 makes us differ from the seed, and what each field below holds. The
// record's fields it writes, by the seed's names:
#define NEWQUE_P prob           // P (FRAC32)
#define NEWQUE_RATE state0      // r, the arrival rate (RATE)
#define NEWQUE_ARRIVED state1   // l, the packets that arrived in T
// and arr_seq, region, event.
// T (USEC) * g (RATE) * RATE_USEC_TO_FRAC32 >> 32 is T g in FRAC32: 2^16 / 10^6 * 2^32.
const bit<96> RATE_USEC_TO_FRAC32 = 281474977;

// A port's NEWQUE parameters and the control's working values: one header (red.p4 says why).
header newque_h {
    frac32_t alpha;
    frac32_t beta;
    usec_t   min_interval;
    rate_t   capacity;
    bit<8>   rate_shift;
    usec_t   sojourn_mask;   // all ones: over arrivals; 0: over departures
    // The control's
    bit<48> arrival;        // USEC48
    bit<48> last_arrival;
    bit<48> last_change;    // the last change of P
    bit<48> gap;            // T
    bit<32> last_seq;       // the previous packet's arrival number
    bit<32> arrived;        // l
    bit<48> b;
    bit<16> bucket;
    rate_t  gain;           // (1 - e^(-T/K)) / T, RATE per packet
    bit<96> spent;          // T g, FRAC32 widened
    bit<96> keep;           // e^(-T/K) = 1 - T g
    bit<96> rate;           // RATE widened
    bit<64> sum;            // FRAC32 widened
    bit<8>  hit;
    bit<8>  due;
    bit<8>  over;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define NEWQUE_ACTION \
    action newque(bit<16> epoch_id, bit<32> prng_seed, \
                  bit<32> limit, bit<2> ecn_mode, frac32_t alpha, frac32_t beta, \
                  usec_t min_interval, rate_t capacity, bit<8> rate_shift, \
                  usec_t sojourn_mask) { \
        aqm_common(NEWQUE_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.newque.setValid(); \
        meta.aqm.newque.alpha = alpha; \
        meta.aqm.newque.beta = beta; \
        meta.aqm.newque.min_interval = min_interval; \
        meta.aqm.newque.capacity = capacity; \
        meta.aqm.newque.rate_shift = rate_shift; \
        meta.aqm.newque.sojourn_mask = sojourn_mask; \
    }

// How AqmDispatch applies the control.
#define NEWQUE_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.newque, std_meta, meta.arr_seq, meta.rec);

control Newque(in port_t index,
               inout newque_h v,
               in standard_metadata_t std_meta,
               in bit<32> arr_seq,
               inout aqm_record_h rec) {

    register<frac32_t, port_t>(PORT_SLOTS) p_reg;
    register<rate_t, port_t>(PORT_SLOTS) rate_reg;
    register<bit<48>, port_t>(PORT_SLOTS) last_arrival_reg;
    register<bit<48>, port_t>(PORT_SLOTS) last_change_reg;
    register<bit<32>, port_t>(PORT_SLOTS) last_seq_reg;

    // The gain g(T) = (1 - e^(-T/K)) / T, interpolated in T's bucket.
    action gain(rate_t gain_at_start, rate_t gain_drop_across) {
        v.hit = 1;
        v.gain = INTERPOLATE(gain_at_start, gain_drop_across,
                             v.gap & ((48w1 << v.rate_shift) - 1), v.rate_shift);
    }

    action beyond() {
    }

    table newque_rate {
        key = {
            index: exact @name("port");
            v.bucket: exact @name("bucket");
        }
        actions = { gain; @defaultonly beyond; }
        const default_action = beyond();
        size = LOOKUP_ENTRIES;
    }

    // Straight-line code in an action: p4c does not propagate its values as expressions
    // into the register calls (each would become a temporary). The rest is in the apply
    // block: p4c would predicate `if`s inside an action into conditional expressions,
    // dearer than the tables and conditions they replace in BMv2 without logging.
    action load() {
        p_reg.read(rec.NEWQUE_P, index);
        rate_reg.read(rec.NEWQUE_RATE, index);
        last_arrival_reg.read(v.last_arrival, index);
        last_change_reg.read(v.last_change, index);
        last_seq_reg.read(v.last_seq, index);
        v.arrival = std_meta.egress_global_timestamp
                    - (bit<48>)(std_meta.deq_timedelta & v.sojourn_mask);
    }

    action init() {
        rec.NEWQUE_P = 0;
        rec.NEWQUE_RATE = 0;
        v.last_arrival = v.arrival;
        v.last_change = 0;
        v.last_seq = arr_seq - 1;
    }

    action store() {
        p_reg.write(index, rec.NEWQUE_P);
        rate_reg.write(index, rec.NEWQUE_RATE);
        last_arrival_reg.write(index, v.arrival);
        last_change_reg.write(index, v.last_change);
        last_seq_reg.write(index, arr_seq);
    }

    apply {
        load();
        if (rec.fresh == 1) {
            init();
        }
        // l: this packet and those BMv2 dropped at its full queue since the last one (the
        // gap in ingress's arrival numbers); over departures, 1.
        rec.arr_seq = arr_seq;
        v.arrived = arr_seq - v.last_seq;
        if (v.sojourn_mask == 0) {
            v.arrived = 1;
        }
        rec.NEWQUE_ARRIVED = v.arrived;

        // r = (1 - e^(-T/K)) l / T + e^(-T/K) r_old, with 1 - e^(-T/K) = T g(T).
        v.gap = v.arrival - v.last_arrival;
        if (NEGATIVE48(v.gap)) {
            v.gap = 0;
        }
        v.b = v.gap >> v.rate_shift;
        if (v.b > (bit<48>)BUCKET_MAX) {
            v.b = (bit<48>)BUCKET_MAX;
        }
        v.bucket = (bit<16>)v.b;
        newque_rate.apply();
        if (v.hit == 1) {
            v.spent = ((bit<96>)v.gap * (bit<96>)v.gain * RATE_USEC_TO_FRAC32) >> 32;
            if (v.spent < 96w0x100000000) {
                v.keep = 96w0x100000000 - v.spent;
                if (v.keep > (bit<96>)FRAC32_ONE) {
                    v.keep = (bit<96>)FRAC32_ONE;
                }
            }
            v.rate = (bit<96>)v.gain * (bit<96>)v.arrived
                     + ((v.keep * (bit<96>)rec.NEWQUE_RATE) >> 32);
            if (v.rate > (bit<96>)0xffffffff) {
                v.rate = (bit<96>)0xffffffff;
            }
            rec.NEWQUE_RATE = (rate_t)v.rate;
        } else {
            rec.NEWQUE_RATE = 0;
        }

        // r >= C or EQ = Q + 1 >= B: P += alpha; otherwise P -= beta; at most once per
        // min_interval.
        if (AT_OR_AFTER(v.arrival, v.last_change)
                && v.arrival - v.last_change > (bit<48>)v.min_interval) {
            v.due = 1;
        }
        if (rec.NEWQUE_RATE >= v.capacity) {
            v.over = 1;
        }
        rec.event = EVENT_HELD;
        if (v.over == 1 || (bit<32>)std_meta.enq_qdepth + 1 >= rec.limit) {
            if (v.due == 1) {
                v.sum = (bit<64>)rec.NEWQUE_P + (bit<64>)v.alpha;
                if (v.sum > (bit<64>)FRAC32_ONE) {
                    v.sum = (bit<64>)FRAC32_ONE;
                }
                rec.NEWQUE_P = (frac32_t)v.sum;
                v.last_change = v.arrival;
                rec.event = EVENT_INCREASE;
            }
        } else if (v.due == 1) {
            if (v.beta < rec.NEWQUE_P) {
                rec.NEWQUE_P = rec.NEWQUE_P - v.beta;
            } else {
                rec.NEWQUE_P = 0;
            }
            v.last_change = v.arrival;
            rec.event = EVENT_DECREASE;
        }
        store();

        // r >= C: the departing (front) packet is marked (ECT) or dropped (Not-ECT) with P.
        if (v.over == 1) {
            rec.region = REGION_A;
            if (rec.rnd < rec.NEWQUE_P) {
                rec.fire = 1;
            }
        }
    }
}

#endif
