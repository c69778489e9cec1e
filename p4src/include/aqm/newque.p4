#ifndef P4AQM_NEWQUE_P4
#define P4AQM_NEWQUE_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// NEWQUE (seed 003, control_plane/algorithms/newque.py): a rate-based AQM. Per packet, in
// arrival order (egress sees a port's packets in the order they arrived):
//   r = (1 - e^(-T/K)) / T + e^(-T/K) r_old       T the inter-arrival time, packets/s
//   EQ = Q + 1                                    Q the queue the packet found, packets
//   r >= C or EQ >= B: P += alpha;  otherwise (r < C): P -= beta;  each change at most
//   once per min_interval (the increase is checked first, as in the seed's Fig. 1)
//   r >= C: the departing (front) packet is marked (ECT) or dropped (Not-ECT) with P
//   EQ > B: dropped (the verdict's limit, B = limit)
// BMv2 serves packets, not bytes (set_queue_rate), so the rate counts packets (l = 1) and
// C is the port's service rate in packets/s. The gain g(T) = (1 - e^(-T/K)) / T, which
// needs exp and a division, comes from the newque_rate table (per bucket of 2^rate_shift
// microseconds of T: its value at the bucket's start and its drop across it,
// interpolated); then 1 - e^(-T/K) = T g(T), so a constant arrival rate is estimated
// exactly whatever the interpolation's error. Past the last bucket (e^(-T/K) < 2^-33) the
// table misses and the estimate restarts from 0.
const bit<8> ALGO_NEWQUE = 3;
// T (USEC) * g (RATE) * RATE_USEC_TO_FRAC32 >> 32 is T g in FRAC32: 2^16 / 10^6 * 2^32.
const bit<96> RATE_USEC_TO_FRAC32 = 281474977;

struct newque_params_t {
    frac32_t alpha;
    frac32_t beta;
    usec_t   min_interval;
    rate_t   capacity;
    bit<8>   rate_shift;
}

action newque(inout aqm_common_t c, inout newque_params_t p, bit<16> epoch_id,
              bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, bit<2> ecn_mode,
              frac32_t alpha, frac32_t beta, usec_t min_interval, rate_t capacity,
              bit<8> rate_shift) {
    aqm_common(c, ALGO_NEWQUE, ecn_mode, limit, epoch_id, prng_seed, use_bmv2_random);
    p.alpha = alpha;
    p.beta = beta;
    p.min_interval = min_interval;
    p.capacity = capacity;
    p.rate_shift = rate_shift;
}

// record: prob = P (FRAC32), state0 = r (RATE), event = the change to P.
control Newque(in port_t port,
               in bit<1> fresh,
               in aqm_common_t c,
               in newque_params_t p,
               in standard_metadata_t std_meta,
               inout aqm_record_t rec,
               out bool fire) {

    register<frac32_t>(PORT_SLOTS) prob_reg;
    register<rate_t>(PORT_SLOTS) rate_reg;
    register<bit<48>>(PORT_SLOTS) last_arrival_reg;
    register<bit<48>>(PORT_SLOTS) last_change_reg;

    bit<16> bucket;
    rate_t gain_start;      // (1 - e^(-T/K)) / T, RATE per packet
    rate_t gain_drop;

    action gain(rate_t gain_at_start, rate_t gain_drop_across) {
        gain_start = gain_at_start;
        gain_drop = gain_drop_across;
    }

    action beyond() {
        gain_start = 0;
        gain_drop = 0;
    }

    table newque_rate {
        key = {
            port: exact @name("port");
            bucket: exact @name("bucket");
        }
        actions = { gain; @defaultonly beyond; }
        const default_action = beyond();
        size = LOOKUP_ENTRIES;
    }

    apply {
        frac32_t prob;
        rate_t rate;
        bit<48> last_arrival;
        bit<48> last_change;
        prob_reg.read(prob, (bit<32>)port);
        rate_reg.read(rate, (bit<32>)port);
        last_arrival_reg.read(last_arrival, (bit<32>)port);
        last_change_reg.read(last_change, (bit<32>)port);
        bit<48> arrival = std_meta.egress_global_timestamp - (bit<48>)std_meta.deq_timedelta;
        if (fresh == 1) {
            prob = 0;
            rate = 0;
            last_arrival = arrival;
            last_change = 0;
        }

        bit<48> gap = elapsed_since(last_arrival, arrival);
        bucket = bucket_of(gap, p.rate_shift);
        if (newque_rate.apply().hit) {
            rate_t g = interpolate(gain_start, gain_drop, gap & ((48w1 << p.rate_shift) - 1),
                                   p.rate_shift);
            bit<96> spent = ((bit<96>)gap * (bit<96>)g * RATE_USEC_TO_FRAC32) >> 32;
            bit<96> keep = 0;
            if (spent < 96w0x100000000) {
                keep = 96w0x100000000 - spent;
                if (keep > (bit<96>)FRAC32_ONE) {
                    keep = (bit<96>)FRAC32_ONE;
                }
            }
            bit<96> r = (bit<96>)g + ((keep * (bit<96>)rate) >> 32);
            if (r > (bit<96>)0xffffffff) {
                r = (bit<96>)0xffffffff;
            }
            rate = (rate_t)r;
        } else {
            rate = 0;
        }

        bool due = elapsed_since(last_change, arrival) > (bit<48>)p.min_interval;
        bool over = rate >= p.capacity;
        if (over || (bit<32>)std_meta.enq_qdepth + 1 >= c.limit) {
            rec.event = EVENT_HELD;
            if (due) {
                prob = frac32_add(prob, p.alpha);
                last_change = arrival;
                rec.event = EVENT_INCREASE;
            }
        } else {
            rec.event = EVENT_HELD;
            if (due) {
                prob = frac32_sub(prob, p.beta);
                last_change = arrival;
                rec.event = EVENT_DECREASE;
            }
        }
        prob_reg.write((bit<32>)port, prob);
        rate_reg.write((bit<32>)port, rate);
        last_arrival_reg.write((bit<32>)port, arrival);
        last_change_reg.write((bit<32>)port, last_change);

        fire = false;
        rec.region = REGION_NONE;
        if (over) {
            rec.region = REGION_A;
            fire = rec.rnd < prob;
        }
        rec.prob = prob;
        rec.state0 = rate;
    }
}

#endif
