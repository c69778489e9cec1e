#ifndef P4AQM_MARKER_P4
#define P4AQM_MARKER_P4

#include "../lib.p4"

// A two-region ramp of the marking probability over the average queue (RED family, AECN):
//   region A [t0, t1): pb = slope_a * (avg - t0)
//   region B [t1, t2): pb = base_b + slope_b * (avg - t1)
//   avg >= t2: forced
// red_h holds a port's RED parameters: the average's (queue_avg.p4) and the ramp.
header red_h {
    frac32_t wq;
    bit<8>   idle_shift;  // idle_decay bucket = idle time (USEC) >> idle_shift
    qpkt_t   t0;
    qpkt_t   t1;
    qpkt_t   t2;
    slope_t  slope_a;
    frac32_t base_b;
    slope_t  slope_b;
}

header marker_h {
    bit<64> pb;      // FRAC32 (saturated), widened
    bit<64> spent;   // count * pb
    bit<32> next;    // count after this packet (saturated)
}

// Decides whether a packet is marked (or dropped: verdict.p4 decides which).
// In regions A and B the base probability pb grows linearly with avg, and the packet fires
// with pa = pb / (1 - count * pb) (Floyd & Jacobson 1993), count being the unmarked packets
// since the last mark, so marks are spaced uniformly in [1, 1/pb]. Without division:
//   fire  <=>  count * pb >= 1  or  rnd * (1 - count * pb) < pb     (all FRAC32)
// record: region, prob = pb, count (before this packet).
control Marker(in bit<32> index,
               in bit<1> fresh,
               in red_h r,
               inout aqm_record_t rec,
               out bit<1> fire) {

    register<bit<32>>(PORT_SLOTS) count_reg;
    marker_h v;

    apply {
        v.setValid();
        count_reg.read(rec.count, index);
        if (fresh == 1) {
            rec.count = 0;
        }
        v.pb = 0;
        if (rec.avg < r.t0) {
            rec.region = REGION_NONE;
        } else if (rec.avg < r.t1) {
            rec.region = REGION_A;
            v.pb = ((bit<64>)r.slope_a * (bit<64>)(rec.avg - r.t0)) >> 16;
        } else if (rec.avg < r.t2) {
            rec.region = REGION_B;
            v.pb = (bit<64>)r.base_b + (((bit<64>)r.slope_b * (bit<64>)(rec.avg - r.t1)) >> 16);
        } else {
            rec.region = REGION_FORCED;
            v.pb = (bit<64>)FRAC32_ONE;
        }
        if (v.pb > (bit<64>)FRAC32_ONE) {
            v.pb = (bit<64>)FRAC32_ONE;
        }
        rec.prob = (frac32_t)v.pb;

        fire = 0;
        v.next = 0;
        if (rec.region == REGION_A || rec.region == REGION_B) {
            v.spent = (bit<64>)rec.count * v.pb;
            if (v.spent >= 64w0x100000000
                    || (bit<64>)rec.rnd * (64w0x100000000 - v.spent) < (v.pb << 32)) {
                fire = 1;
            } else if (rec.count == 0xffffffff) {
                v.next = rec.count;
            } else {
                v.next = rec.count + 1;
            }
        }
        count_reg.write(index, v.next);
    }
}

#endif
