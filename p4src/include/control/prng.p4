#ifndef P4AQM_PRNG_P4
#define P4AQM_PRNG_P4

#include "../headers.p4"

// One uniform FRAC32 draw per packet. The default is a per-port xorshift32 stream
// (Marsaglia 2003) seeded by the controller, so runs are reproducible and the golden model
// can follow the switch draw by draw; BMv2's random() is the unseedable alternative.
control Prng(in port_t port, in bit<1> fresh, in bit<32> seed, in bit<1> bmv2_random,
             out frac32_t rnd) {

    register<bit<32>>(PORT_SLOTS) state_reg;

    apply {
        if (bmv2_random == 1) {
            random(rnd, 0, FRAC32_ONE);
        } else {
            bit<32> x;
            state_reg.read(x, (bit<32>)port);
            if (fresh == 1 || x == 0) {
                x = seed;
            }
            // xorshift32 never leaves 0; a zero seed would stall it.
            if (x == 0) {
                x = 1;
            }
            x = x ^ (x << 13);
            x = x ^ (x >> 17);
            x = x ^ (x << 5);
            state_reg.write((bit<32>)port, x);
            rnd = x;
        }
    }
}

#endif
