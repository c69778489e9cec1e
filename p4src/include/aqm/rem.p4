#ifndef P4AQM_REM_P4
#define P4AQM_REM_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// REM (Athuraliya et al. 2001, control_plane/algorithms/rem.py): every interval,
//   price <- max(0, price + gamma (alpha (b - b*) + x - c)),  mark = 1 - phi^(-price)
// with b the backlog now (deq_qdepth), x the packets that arrived in the interval and c
// the packets the link serves in one (the units of the authors' ns-2 code). x comes from
// the arrival numbers ingress stamps, so it counts packets BMv2 dropped at a full queue
// too. The first packet to depart after a boundary runs the update; a missed interval
// (no departure: an empty queue, b = x = 0) lowers the price by down = gamma (alpha b* + c).
// The change is the difference of two non-negative PRICE sums:
//   up = gamma alpha b + gamma x,  down (action data)
// phi^(-price) comes from the rem_mark table, interpolated like idle_decay, keyed by
// price >> in_shift (saturated to 32 bits) >> mark_shift; past the last bucket it is 0.
// The marking probability is kept between updates: packets pay no lookup.
const bit<8> ALGO_REM = 6;
// Bounds that keep every sum inside 64 bits (gamma and gamma alpha are below 2^31).
const bit<32> REM_X_MAX = 0xffffff;
const price_t REM_PRICE_MAX = 0x3fffffffffffffff;

struct rem_params_t {
    price_t gamma_alpha;   // PRICE per packet of backlog
    price_t gamma;         // PRICE per arrival
    price_t down;          // PRICE per interval: gamma (alpha b* + c)
    usec_t  interval;
    bit<32> inv_interval;  // ceil(2^32 / interval)
    bit<8>  in_shift;
    bit<8>  mark_shift;
}

action rem(inout aqm_common_t c, inout rem_params_t p, bit<16> epoch_id,
           bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, bit<2> ecn_mode,
           price_t gamma_alpha, price_t gamma, price_t down, usec_t interval,
           bit<32> inv_interval, bit<8> in_shift, bit<8> mark_shift) {
    aqm_common(c, ALGO_REM, ecn_mode, limit, epoch_id, prng_seed, use_bmv2_random);
    p.gamma_alpha = gamma_alpha;
    p.gamma = gamma;
    p.down = down;
    p.interval = interval;
    p.inv_interval = inv_interval;
    p.in_shift = in_shift;
    p.mark_shift = mark_shift;
}

// record: prob = marking probability (FRAC32), state0 = price * 2^16 (saturated),
// state1 = x of the interval this packet closed, event = EVENT_UPDATE when it did.
control Rem(in port_t port,
            in bit<1> fresh,
            in rem_params_t p,
            in standard_metadata_t std_meta,
            in bit<32> arr_seq,
            inout aqm_record_t rec,
            out bool fire) {

    IntervalClock() clock;
    register<price_t>(PORT_SLOTS) price_reg;
    register<frac32_t>(PORT_SLOTS) mark_reg;
    register<bit<32>>(PORT_SLOTS) seq_reg;

    bit<16> bucket;
    frac32_t start;
    frac32_t drop;

    action factor(frac32_t start_factor, frac32_t drop_across) {
        start = start_factor;
        drop = drop_across;
    }

    action beyond() {
        start = 0;
        drop = 0;
    }

    table rem_mark {
        key = {
            port: exact @name("port");
            bucket: exact @name("bucket");
        }
        actions = { factor; @defaultonly beyond; }
        const default_action = beyond();
        size = LOOKUP_ENTRIES;
    }

    apply {
        price_t price;
        frac32_t mark;
        bit<32> seq;
        price_reg.read(price, (bit<32>)port);
        mark_reg.read(mark, (bit<32>)port);
        seq_reg.read(seq, (bit<32>)port);
        if (fresh == 1) {
            price = 0;
            mark = 0;
            seq = arr_seq - 1;
        }
        bool due;
        bit<32> missed;
        clock.apply(port, fresh, std_meta.egress_global_timestamp, p.interval, p.inv_interval,
                    due, missed);
        if (due) {
            bit<96> idle = (bit<96>)p.down * (bit<96>)missed;
            if (idle >= (bit<96>)price) {
                price = 0;
            } else {
                price = price - (price_t)idle;
            }
            rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
            bit<32> x = arr_seq - seq;
            if (x > REM_X_MAX) {
                x = REM_X_MAX;
            }
            bit<64> up = p.gamma_alpha * (bit<64>)std_meta.deq_qdepth + p.gamma * (bit<64>)x;
            price = price + up;
            if (p.down >= price) {
                price = 0;
            } else {
                price = price - p.down;
            }
            if (price > REM_PRICE_MAX) {
                price = REM_PRICE_MAX;
            }
            bit<64> key = price >> p.in_shift;
            if (key > 0xffffffff) {
                key = 0xffffffff;
            }
            bucket = bucket_of((bit<48>)key, p.mark_shift);
            rem_mark.apply();
            bit<48> offset = (bit<48>)key & ((48w1 << p.mark_shift) - 1);
            mark = FRAC32_ONE - interpolate(start, drop, offset, p.mark_shift);
            seq = arr_seq;
            price_reg.write((bit<32>)port, price);
            mark_reg.write((bit<32>)port, mark);
            seq_reg.write((bit<32>)port, seq);
            rec.event = EVENT_UPDATE;
            rec.state1 = x;
        } else if (fresh == 1) {
            price_reg.write((bit<32>)port, price);
            mark_reg.write((bit<32>)port, mark);
            seq_reg.write((bit<32>)port, seq);
        }

        rec.arr_seq = arr_seq;
        rec.prob = mark;
        rec.region = REGION_NONE;
        if (mark != 0) {
            rec.region = REGION_A;
        }
        fire = rec.rnd < mark;
        bit<64> shown = price >> 16;
        if (shown > 0xffffffff) {
            shown = 0xffffffff;
        }
        rec.state0 = (bit<32>)shown;
    }
}

#endif
