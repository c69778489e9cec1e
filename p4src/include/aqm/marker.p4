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
    bit<48> entry;   // the count register's entry: epoch ++ count
    bit<64> pb;      // FRAC32 (saturated), widened
    bit<64> spent;   // count * pb
    bit<32> next;    // count after this packet (saturated)
}

// Decides whether a packet is marked (or dropped: verdict.p4 decides which).
// In regions A and B the base probability pb grows linearly with avg, and the packet fires
// with pa = pb / (1 - count * pb) (Floyd & Jacobson 1993), count being the group's unmarked
// packets since its last mark, so marks are spaced uniformly in [1, 1/pb]. Without division:
//   fire  <=>  count * pb >= 1  or  rnd * (1 - count * pb) < pb     (all FRAC32)
// One count per group (index = port * 4 + group; the RED family has one group): with one
// count per port, the group with the highest pb would take most marks (AECN's robust group
// 5 times the average one's instead of twice, in the model). A count from an earlier epoch
// counts as 0, so a new epoch resets every group's.
// record: region, prob = pb, count (before this packet).
control Marker(in bit<32> index,
               in red_h r,
               inout aqm_record_t rec,
               out bit<1> fire) {

    register<bit<48>>(PORT_SLOTS * 4) count_reg;
    marker_h v;

    // In an action: p4c does not propagate the concatenation into the register call.
    action store() {
        v.entry = rec.epoch ++ v.next;
    }

    apply {
        v.setValid();
        count_reg.read(v.entry, index);
        rec.count = v.entry[31:0];
        if (v.entry[47:32] != rec.epoch) {
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
        store();
        count_reg.write(index, v.entry);
    }
}

#endif
