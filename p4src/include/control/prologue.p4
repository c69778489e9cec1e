#ifndef P4AQM_PROLOGUE_P4
#define P4AQM_PROLOGUE_P4

#include "../headers.p4"

// What every AQM packet does first: its codepoint on arrival, its port's epoch, and one
// random draw. In one control so that they share two tables (p4c makes a table of every
// stretch of straight-line code, and every table costs every packet).
//
// Registers cannot be written over P4Runtime, so a port's AQM state is reset by writing a
// new epoch number (with the aqm_config entry): the first packet that sees it starts from
// a clean state (algorithm state 0, PRNG reseeded, telemetry's numbers from 1 on a port
// that exports). rec.fresh is 0 on entry (the record is zeroed) and set for that packet.
//
// The draw is one uniform FRAC32 per packet, in a profile with an algorithm that draws
// (P4AQM_WITH_DRAWS). The default is a per-port xorshift32 stream (Marsaglia 2003) seeded
// by the controller, so runs are reproducible and the golden model can follow the switch
// draw by draw; BMv2's random() is the unseedable alternative, chosen by the seed 0 (where
// xorshift32 stays, so a seed of the stream is never 0: control_plane/aqm.py's port_seed),
// and the only one in a profile without the seeded stream (P4AQM_WITH_SEEDED_PRNG). load()
// steps the stream on every packet, whichever source the port draws from; the epoch's
// first packet restarts it at xorshift32(seed). A port that changes the seed it draws from
// or its source starts a new epoch (control_plane/switch.py).
#ifdef P4AQM_WITH_SEEDED_PRNG
#define XORSHIFT32(x) \
    x = x ^ (x << 13); \
    x = x ^ (x >> 17); \
    x = x ^ (x << 5);
#endif

control Prologue(in port_t index,
                 in headers_t hdr,
                 inout aqm_record_h rec) {

    register<bit<16>, port_t>(PORT_SLOTS) epoch_reg;
#ifdef P4AQM_WITH_SEEDED_PRNG
    register<bit<32>, port_t>(PORT_SLOTS) state_reg;    // the PRNG's
#endif

    // A packet that is not IPv4 reads here what an earlier packet left in the header; it
    // is set right below (the record is Not-ECT but for IPv4).
    action load() {
        rec.ecn_in = (bit<8>)hdr.ipv4.ecn;
        epoch_reg.read(rec.epoch, index);
#ifdef P4AQM_WITH_SEEDED_PRNG
        state_reg.read(rec.rnd, index);
        XORSHIFT32(rec.rnd)
        state_reg.write(index, rec.rnd);
#endif
    }

    action not_ipv4() {
        rec.ecn_in = (bit<8>)ECN_NOT_ECT;
    }

    action restart() {
        rec.fresh = 1;
        rec.epoch = rec.epoch_id;
#ifdef P4AQM_WITH_SEEDED_PRNG
        rec.rnd = rec.seed;
        XORSHIFT32(rec.rnd)
#endif
    }

    // An action of its own: in restart(), p4c would propagate the values' expressions into
    // the register calls (temporaries, defines.p4).
    action save_epoch() {
        epoch_reg.write(index, rec.epoch);
#ifdef P4AQM_WITH_SEEDED_PRNG
        state_reg.write(index, rec.rnd);
#endif
    }

    apply {
        load();
        if (!hdr.ipv4.isValid()) {
            not_ipv4();
        }
        if (rec.epoch != rec.epoch_id) {
            restart();
            save_epoch();
        }
#if defined(P4AQM_WITH_DRAWS) && defined(P4AQM_WITH_SEEDED_PRNG)
        if (rec.seed == 0) {
            random(rec.rnd, 0, FRAC32_ONE);
        }
#elif defined(P4AQM_WITH_DRAWS)
        random(rec.rnd, 0, FRAC32_ONE);
#endif
    }
}

#endif
