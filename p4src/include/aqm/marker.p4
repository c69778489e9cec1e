#ifndef P4AQM_MARKER_P4
#define P4AQM_MARKER_P4

#include "../lib.p4"

// A two-region ramp of the marking probability over the average queue (RED family):
//   region A [t0, t1): pb = slope_a * (avg - t0)
//   region B [t1, t2): pb = base_b + slope_b * (avg - t1)
//   avg >= t2: forced
struct ramp_t {
    qpkt_t   t0;
    qpkt_t   t1;
    qpkt_t   t2;
    slope_t  slope_a;
    frac32_t base_b;
    slope_t  slope_b;
}

// Decides whether a packet is marked (or dropped: verdict.p4 decides which).
// In regions A and B the base probability pb grows linearly with avg, and the packet fires
// with pa = pb / (1 - count * pb) (Floyd & Jacobson 1993), count being the unmarked packets
// since the last mark, so marks are spaced uniformly in [1, 1/pb]. Without division:
//   fire  <=>  count * pb >= 1  or  rnd * (1 - count * pb) < pb     (all FRAC32)
control Marker(in port_t port,
               in bit<1> fresh,
               in ramp_t r,
               in qpkt_t avg,
               in frac32_t rnd,
               out bit<8> region,
               out frac32_t prob,
               out bit<32> count_before,
               out bool fire) {

    register<bit<32>>(PORT_SLOTS) count_reg;

    apply {
        bit<32> count;
        count_reg.read(count, (bit<32>)port);
        if (fresh == 1) {
            count = 0;
        }
        count_before = count;

        bit<64> pb = 0;
        if (avg < r.t0) {
            region = REGION_NONE;
        } else if (avg < r.t1) {
            region = REGION_A;
            pb = ((bit<64>)r.slope_a * (bit<64>)(avg - r.t0)) >> 16;
        } else if (avg < r.t2) {
            region = REGION_B;
            pb = (bit<64>)r.base_b + (((bit<64>)r.slope_b * (bit<64>)(avg - r.t1)) >> 16);
        } else {
            region = REGION_FORCED;
            pb = (bit<64>)FRAC32_ONE;
        }
        if (pb > (bit<64>)FRAC32_ONE) {
            pb = (bit<64>)FRAC32_ONE;
        }
        prob = (frac32_t)pb;

        fire = false;
        if (region == REGION_A || region == REGION_B) {
            bit<64> spent = (bit<64>)count * pb;
            if (spent >= 64w0x100000000) {
                fire = true;
            } else if ((bit<64>)rnd * (64w0x100000000 - spent) < (pb << 32)) {
                fire = true;
            }
            if (fire) {
                count = 0;
            } else if (count != 0xffffffff) {
                count = count + 1;
            }
        } else {
            count = 0;
        }
        count_reg.write((bit<32>)port, count);
    }
}

#endif
