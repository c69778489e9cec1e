#ifndef P4AQM_PI_CORE_P4
#define P4AQM_PI_CORE_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// The core PIE (RFC 8033, pie.p4) and PI2 (RFC 9332, pi2.p4) share: a proportional-integral
// controller on queueing delay, updated every tupdate (control_plane/algorithms/pi_core.py
// says how it meets BMv2). Each applies it to every departing packet, then its own step:
// PIE scales the update by p's band, PI2 applies it as it is.
control PiCore(in port_t index,
               in bit<1> fresh,
               in standard_metadata_t std_meta,
               in bit<32> deq_qdepth,
               in usec_t tupdate,
               in bit<32> inv_tupdate,
               inout usec_t current_qdelay,
               inout bit<48> next,
               inout bit<8> due,
               inout bit<32> missed) {

    IntervalClock() update_timer;

    apply {
        update_timer.apply(index, fresh, std_meta.egress_global_timestamp, tupdate,
                           inv_tupdate, next, due, missed);
        // The departing packet's sojourn; 0 when it leaves its queue empty (idle).
        if (deq_qdepth != 0) {
            current_qdelay = std_meta.deq_timedelta;
        }
    }
}

// The update's change, alpha (qdelay - target) + beta (qdelay - qdelay_old), as two
// non-negative sums (P48 widened): up = alpha qdelay + beta qdelay + base (PI2: p'),
// down = alpha target + beta qdelay_old; qdelay is the current_qdelay of the packet before
// the one that runs the update (the last one dequeued when the timer would have fired).
control PiUpdate(in pgain_t alpha,
                 in pgain_t beta,
                 in p48_t alpha_target,
                 in usec_t qdelay,
                 in usec_t qdelay_old,
                 in bit<96> base,
                 inout bit<96> up,
                 inout bit<96> down) {
    apply {
        up = (bit<96>)alpha * (bit<96>)qdelay + (bit<96>)beta * (bit<96>)qdelay + base;
        down = (bit<96>)alpha_target + (bit<96>)beta * (bit<96>)qdelay_old;
    }
}

#endif
