#ifndef P4AQM_REM_P4
#define P4AQM_REM_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// REM (Athuraliya et al. 2001): control_plane/algorithms/rem.py says what it does, where
// BMv2 makes us differ from the paper, and what each field below holds. The record's
// fields it writes, by the paper's names:
#define REM_PRICE state0      // the link price p, * 2^16 (saturated)
#define REM_ARRIVALS state1   // x, the packets that arrived in the interval it closed
// and prob (the marking probability 1 - phi^(-p), FRAC32), deq_qdepth (the backlog b it
// used), arr_seq, region, event.
// Bounds that keep every sum inside 64 bits (gamma and gamma alpha are below 2^31).
const bit<32> REM_X_MAX = 0xffffff;
const price_t REM_PRICE_MAX = 0x3fffffffffffffff;

// A port's REM parameters and the control's working values: one header (red.p4 says why).
header rem_h {
    price_t gamma_alpha;   // PRICE per packet of backlog
    price_t gamma;         // PRICE per arrival
    price_t down;          // PRICE per interval: gamma (alpha b* + c)
    usec_t  interval;
    bit<32> inv_interval;  // ceil(2^32 / interval)
    bit<8>  in_shift;
    bit<8>  mark_shift;
    // The control's
    bit<48> next;          // the next update (IntervalClock)
    bit<32> missed;        // intervals that passed without a packet
    bit<8>  due;           // this packet runs the update
    price_t price;
    bit<32> seq;           // arrival number at the last update
    bit<96> idle;          // the missed intervals' decrease, PRICE widened
    bit<64> key;           // the marking table's input
    bit<64> b;
    bit<16> bucket;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define REM_ACTION \
    action rem(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
               bit<2> ecn_mode, price_t gamma_alpha, price_t gamma, price_t down, \
               usec_t interval, bit<32> inv_interval, bit<8> in_shift, bit<8> mark_shift) { \
        aqm_common(REM_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.rem.setValid(); \
        meta.aqm.rem.gamma_alpha = gamma_alpha; \
        meta.aqm.rem.gamma = gamma; \
        meta.aqm.rem.down = down; \
        meta.aqm.rem.interval = interval; \
        meta.aqm.rem.inv_interval = inv_interval; \
        meta.aqm.rem.in_shift = in_shift; \
        meta.aqm.rem.mark_shift = mark_shift; \
    }

// How AqmDispatch applies the control.
#define REM_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.rem, std_meta, meta.arr_seq, meta.rec);

control Rem(in port_t index,
            inout rem_h v,
            in standard_metadata_t std_meta,
            in bit<32> arr_seq,
            inout aqm_record_h rec) {

    IntervalClock() clock;
    register<price_t, port_t>(PORT_SLOTS) price_reg;
    register<frac32_t, port_t>(PORT_SLOTS) mark_reg;
    register<bit<32>, port_t>(PORT_SLOTS) seq_reg;

    action load() {
        price_reg.read(v.price, index);
        mark_reg.read(rec.prob, index);
        seq_reg.read(v.seq, index);
    }

    action init() {
        v.price = 0;
        rec.prob = 0;
        v.seq = arr_seq - 1;
    }

    action store() {
        price_reg.write(index, v.price);
        mark_reg.write(index, rec.prob);
        seq_reg.write(index, v.seq);
    }

    action updated() {
        price_reg.write(index, v.price);
        mark_reg.write(index, rec.prob);
        seq_reg.write(index, arr_seq);
        rec.event = EVENT_UPDATE;
    }

    // prob = 1 - phi^(-price), phi^(-price) interpolated in the bucket.
    action factor(frac32_t start_factor, frac32_t drop_across) {
        rec.prob = FRAC32_ONE - INTERPOLATE(start_factor, drop_across,
                                            v.key & ((64w1 << v.mark_shift) - 1),
                                            v.mark_shift);
    }

    action beyond() {
        rec.prob = FRAC32_ONE;
    }

    table rem_mark {
        key = {
            index: exact @name("port");
            v.bucket: exact @name("bucket");
        }
        actions = { factor; @defaultonly beyond; }
        const default_action = beyond();
        size = LOOKUP_ENTRIES;
    }

    apply {
        load();
        if (rec.fresh == 1) {
            init();
        }
        rec.arr_seq = arr_seq;
        clock.apply(index, rec.fresh, std_meta.egress_global_timestamp, v.interval,
                    v.inv_interval, v.next, v.due, v.missed);
        if (v.due == 1) {
            // The intervals no packet departed in (b = x = 0): each lowers the price by
            // down = gamma (alpha b* + c), at once.
            v.idle = (bit<96>)v.down * (bit<96>)v.missed;
            if (v.idle >= (bit<96>)v.price) {
                v.price = 0;
            } else {
                v.price = v.price - (price_t)v.idle;
            }
            // p <- max(0, p + gamma (alpha (b - b*) + x - c)), as up - down.
            rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
            rec.REM_ARRIVALS = arr_seq - v.seq;
            if (rec.REM_ARRIVALS > REM_X_MAX) {
                rec.REM_ARRIVALS = REM_X_MAX;
            }
            v.price = v.price + v.gamma_alpha * (bit<64>)rec.deq_qdepth
                      + v.gamma * (bit<64>)rec.REM_ARRIVALS;
            if (v.down >= v.price) {
                v.price = 0;
            } else {
                v.price = v.price - v.down;
            }
            if (v.price > REM_PRICE_MAX) {
                v.price = REM_PRICE_MAX;
            }
            // The marking probability 1 - phi^(-p), from the rem_mark table.
            v.key = v.price >> v.in_shift;
            if (v.key > 0xffffffff) {
                v.key = 0xffffffff;
            }
            v.b = v.key >> v.mark_shift;
            if (v.b > (bit<64>)BUCKET_MAX) {
                v.b = (bit<64>)BUCKET_MAX;
            }
            v.bucket = (bit<16>)v.b;
            rem_mark.apply();
            updated();
        } else if (rec.fresh == 1) {
            store();
        }

        if (rec.prob != 0) {
            rec.region = REGION_A;
        }
        if (rec.rnd < rec.prob) {
            rec.fire = 1;
        }
        v.key = v.price >> 16;
        if (v.key > 0xffffffff) {
            v.key = 0xffffffff;
        }
        rec.REM_PRICE = (bit<32>)v.key;
    }
}

#endif
