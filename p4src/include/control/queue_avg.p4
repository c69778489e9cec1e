#ifndef P4AQM_QUEUE_AVG_P4
#define P4AQM_QUEUE_AVG_P4

#include "../headers.p4"

// RED's average queue, per port, in QPKT. Egress sees packets in arrival order (one FIFO
// per port), so the update uses the depth each packet found on arrival, as RED does.
//   busy arrival:  avg += wq * (q - avg)            (rounded toward the old avg)
//   idle arrival:  avg *= (1 - wq)^m, m = idle time / packet time
// (1 - wq)^m comes from the idle_decay table, as P4-CoDel replaces its square root with a
// lookup: the controller writes one FRAC32 factor per bucket of 2^idle_shift microseconds;
// an idle time past the last bucket misses and resets the average to 0.
control QueueAverage(in port_t port,
                     in bit<1> fresh,
                     in aqm_params_t p,
                     in standard_metadata_t std_meta,
                     out qpkt_t avg) {

    register<qpkt_t>(PORT_SLOTS) avg_reg;
    // USEC: when the previous packet left the queue (start of the idle period).
    register<usec_t>(PORT_SLOTS) last_departure_reg;

    bit<16> bucket;
    frac32_t factor;

    action decay(frac32_t decay_factor) {
        factor = decay_factor;
    }

    action decay_to_zero() {
        factor = 0;
    }

    table idle_decay {
        key = {
            port: exact @name("port");
            bucket: exact @name("bucket");
        }
        actions = { decay; @defaultonly decay_to_zero; }
        const default_action = decay_to_zero();
        size = 65536;
    }

    apply {
        usec_t last_departure;
        avg_reg.read(avg, (bit<32>)port);
        last_departure_reg.read(last_departure, (bit<32>)port);
        if (fresh == 1) {
            avg = 0;
            last_departure = 0;
        }
        if (std_meta.enq_qdepth == 0) {
            usec_t idle = std_meta.enq_timestamp - last_departure;
            // The previous departure can be stamped a little after this arrival.
            if (idle > 0x7fffffff) {
                idle = 0;
            }
            bit<32> b = idle >> p.idle_shift;
            if (b > IDLE_BUCKET_MAX) {
                b = IDLE_BUCKET_MAX;
            }
            bucket = (bit<16>)b;
            idle_decay.apply();
            avg = (qpkt_t)(((bit<64>)avg * (bit<64>)factor) >> 32);
        } else {
            bit<19> depth = std_meta.enq_qdepth;
            if (depth > QDEPTH_MAX) {
                depth = QDEPTH_MAX;
            }
            qpkt_t q = ((qpkt_t)depth) << 16;
            if (q >= avg) {
                avg = avg + (qpkt_t)(((bit<64>)(q - avg) * (bit<64>)p.wq) >> 32);
            } else {
                avg = avg - (qpkt_t)(((bit<64>)(avg - q) * (bit<64>)p.wq) >> 32);
            }
        }
        avg_reg.write((bit<32>)port, avg);
        last_departure_reg.write((bit<32>)port, std_meta.enq_timestamp + std_meta.deq_timedelta);
    }
}

#endif
