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
// (1 - wq)^m comes from the idle_decay table (control_plane/lookup.py): the controller
// writes, per bucket of 2^idle_shift microseconds, the factor at the bucket's start and how
// much it falls across the bucket; the data plane interpolates linearly. An idle time past
// the last bucket misses and resets the average to 0.
// Working values in red_h (red.p4). record: avg.
control QueueAverage(in port_t index,
                     inout red_h v,
                     in standard_metadata_t std_meta,
                     inout aqm_record_h rec) {

    register<qavg_t, port_t>(PORT_SLOTS) avg_reg;
    register<bit<48>, port_t>(PORT_SLOTS) last_departure_reg;

    // avg *= the factor interpolated in the bucket (FRAC32).
    action decay(frac32_t start_factor, frac32_t drop_across) {
        v.avg = (qavg_t)(((bit<96>)v.avg * (bit<96>)INTERPOLATE(start_factor, drop_across,
                             v.idle & ((48w1 << v.idle_shift) - 1), v.idle_shift)) >> 32);
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

    // The idle time and its bucket in one action (a table, where two would cost a table more).
    action idle_time() {
        v.idle = std_meta.egress_global_timestamp - (bit<48>)std_meta.deq_timedelta
                 - v.last_departure;
        v.bucket = v.idle >> v.idle_shift;
    }

    action no_idle_time() {
        v.idle = 0;
        v.bucket = 0;
    }

    apply {
        avg_reg.read(v.avg, index);
        last_departure_reg.read(v.last_departure, index);
        if (rec.fresh == 1) {
            v.avg = 0;
            v.last_departure = 0;
        }
        if (std_meta.enq_qdepth == 0) {
            idle_time();
            // The previous departure can be stamped a little after this arrival.
            if (NEGATIVE48(v.idle)) {
                no_idle_time();
            }
            idle_decay.apply();
        } else {
            v.q = (qavg_t)std_meta.enq_qdepth << 32;
            if (std_meta.enq_qdepth > QDEPTH_MAX) {
                v.q = 64w0xffff00000000;   // QDEPTH_MAX packets
            }
            if (v.q >= v.avg) {
                v.avg = v.avg + (qavg_t)(((bit<96>)(v.q - v.avg) * (bit<96>)v.wq) >> 32);
            } else {
                v.avg = v.avg - (qavg_t)(((bit<96>)(v.avg - v.q) * (bit<96>)v.wq) >> 32);
            }
        }
        avg_reg.write(index, v.avg);
        last_departure_reg.write(index, std_meta.egress_global_timestamp);
        rec.avg = (qpkt_t)(v.avg >> 16);
    }
}

#endif
