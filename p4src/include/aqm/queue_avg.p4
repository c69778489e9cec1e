#ifndef P4AQM_QUEUE_AVG_P4
#define P4AQM_QUEUE_AVG_P4

#include "../lib.p4"

// RED's average queue, per port (the RED family and AECN). Egress sees a port's packets in
// arrival order (one FIFO per port), so the update uses the depth each packet found on
// arrival, as RED does.
//   busy arrival:  avg += wq * (q - avg)            (rounded toward the old avg)
//   idle arrival:  avg *= (1 - wq)^m, m = idle time / packet time
// The register keeps QAVG (packets * 2^32) so that a small wq still moves it; the rest of
// the pipeline reads QPKT (avg >> 16).
// (1 - wq)^m comes from the idle_decay table, as P4-CoDel replaces its square root with a
// lookup: the controller writes, per bucket of 2^idle_shift microseconds, the factor at
// the bucket's start and how much it falls across the bucket; the data plane interpolates
// linearly. An idle time past the last bucket misses and resets the average to 0.
control QueueAverage(in port_t port,
                     in bit<1> fresh,
                     in frac32_t wq,
                     in bit<8> idle_shift,
                     in standard_metadata_t std_meta,
                     out qpkt_t avg_qpkt) {

    register<qavg_t>(PORT_SLOTS) avg_reg;
    // USEC48: when the previous packet left the queue (start of the idle period).
    register<bit<48>>(PORT_SLOTS) last_departure_reg;

    bit<16> bucket;
    frac32_t start;
    frac32_t drop;

    action decay(frac32_t start_factor, frac32_t drop_across) {
        start = start_factor;
        drop = drop_across;
    }

    action decay_to_zero() {
        start = 0;
        drop = 0;
    }

    table idle_decay {
        key = {
            port: exact @name("port");
            bucket: exact @name("bucket");
        }
        actions = { decay; @defaultonly decay_to_zero; }
        const default_action = decay_to_zero();
        size = LOOKUP_ENTRIES;
    }

    apply {
        qavg_t avg;
        bit<48> last_departure;
        avg_reg.read(avg, (bit<32>)port);
        last_departure_reg.read(last_departure, (bit<32>)port);
        if (fresh == 1) {
            avg = 0;
            last_departure = 0;
        }
        bit<48> now = std_meta.egress_global_timestamp;
        if (std_meta.enq_qdepth == 0) {
            bit<48> idle = elapsed_since(last_departure, now - (bit<48>)std_meta.deq_timedelta);
            bucket = bucket_of(idle, idle_shift);
            idle_decay.apply();
            frac32_t factor = interpolate(start, drop, idle & ((48w1 << idle_shift) - 1),
                                          idle_shift);
            avg = (qavg_t)(((bit<96>)avg * (bit<96>)factor) >> 32);
        } else {
            bit<19> depth = std_meta.enq_qdepth;
            if (depth > QDEPTH_MAX) {
                depth = QDEPTH_MAX;
            }
            qavg_t q = ((qavg_t)depth) << 32;
            if (q >= avg) {
                avg = avg + (qavg_t)(((bit<96>)(q - avg) * (bit<96>)wq) >> 32);
            } else {
                avg = avg - (qavg_t)(((bit<96>)(avg - q) * (bit<96>)wq) >> 32);
            }
        }
        avg_reg.write((bit<32>)port, avg);
        last_departure_reg.write((bit<32>)port, now);
        avg_qpkt = (qpkt_t)(avg >> 16);
    }
}

#endif
