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

header queue_avg_h {
    bit<64> avg;             // QAVG
    bit<64> q;               // QAVG
    bit<48> last_departure;  // USEC48: when the previous packet left (start of idleness)
    bit<48> idle;            // USEC48
    bit<48> b;
    bit<16> bucket;
}

control QueueAverage(in bit<32> index,
                     in bit<1> fresh,
                     in frac32_t wq,
                     in bit<8> idle_shift,
                     in standard_metadata_t std_meta,
                     out qpkt_t avg_qpkt) {

    register<qavg_t>(PORT_SLOTS) avg_reg;
    register<bit<48>>(PORT_SLOTS) last_departure_reg;
    queue_avg_h v;

    // avg *= the factor interpolated in the bucket (FRAC32).
    action decay(frac32_t start_factor, frac32_t drop_across) {
        v.avg = (qavg_t)(((bit<96>)v.avg * (bit<96>)INTERPOLATE(start_factor, drop_across,
                             v.idle & ((48w1 << idle_shift) - 1), idle_shift)) >> 32);
    }

    action decay_to_zero() {
        v.avg = 0;
    }

    table idle_decay {
        key = {
            index: exact @name("port");
            v.bucket: exact @name("bucket");
        }
        actions = { decay; @defaultonly decay_to_zero; }
        const default_action = decay_to_zero();
        size = LOOKUP_ENTRIES;
    }

    apply {
        v.setValid();
        avg_reg.read(v.avg, index);
        last_departure_reg.read(v.last_departure, index);
        if (fresh == 1) {
            v.avg = 0;
            v.last_departure = 0;
        }
        if (std_meta.enq_qdepth == 0) {
            // The previous departure can be stamped a little after this arrival.
            v.idle = std_meta.egress_global_timestamp - (bit<48>)std_meta.deq_timedelta
                     - v.last_departure;
            if (v.idle > 0x7fffffffffff) {
                v.idle = 0;
            }
            v.b = v.idle >> idle_shift;
            if (v.b > (bit<48>)BUCKET_MAX) {
                v.b = (bit<48>)BUCKET_MAX;
            }
            v.bucket = (bit<16>)v.b;
            idle_decay.apply();
        } else {
            v.q = (qavg_t)std_meta.enq_qdepth << 32;
            if (std_meta.enq_qdepth > QDEPTH_MAX) {
                v.q = 64w0xffff00000000;   // QDEPTH_MAX packets
            }
            if (v.q >= v.avg) {
                v.avg = v.avg + (qavg_t)(((bit<96>)(v.q - v.avg) * (bit<96>)wq) >> 32);
            } else {
                v.avg = v.avg - (qavg_t)(((bit<96>)(v.avg - v.q) * (bit<96>)wq) >> 32);
            }
        }
        avg_reg.write(index, v.avg);
        last_departure_reg.write(index, std_meta.egress_global_timestamp);
        avg_qpkt = (qpkt_t)(v.avg >> 16);
    }
}

#endif
