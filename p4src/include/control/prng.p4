#ifndef P4AQM_PRNG_P4
#define P4AQM_PRNG_P4

#include "../headers.p4"

// One uniform FRAC32 draw per packet. The default is a per-port xorshift32 stream
// (Marsaglia 2003) seeded by the controller, so runs are reproducible and the golden model
// can follow the switch draw by draw; BMv2's random() is the unseedable alternative.
control Prng(in bit<32> index, in aqm_common_h c, inout aqm_record_h rec) {

    register<bit<32>>(PORT_SLOTS) state_reg;

    apply {
        if (c.bmv2_random == 1) {
            random(rec.rnd, 0, FRAC32_ONE);
        } else {
            state_reg.read(rec.rnd, index);
            if (c.fresh == 1 || rec.rnd == 0) {
                rec.rnd = c.seed;
            }
            // xorshift32 never leaves 0; a zero seed would stall it.
            if (rec.rnd == 0) {
                rec.rnd = 1;
            }
            rec.rnd = rec.rnd ^ (rec.rnd << 13);
            rec.rnd = rec.rnd ^ (rec.rnd >> 17);
            rec.rnd = rec.rnd ^ (rec.rnd << 5);
            state_reg.write(index, rec.rnd);
        }
    }
}

#endif
