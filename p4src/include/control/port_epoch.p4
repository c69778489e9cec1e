#ifndef P4AQM_PORT_EPOCH_P4
#define P4AQM_PORT_EPOCH_P4

#include "../headers.p4"

// Registers cannot be written over P4Runtime, so a port's AQM state is reset by writing a
// new epoch number: the first packet that sees it starts from a clean state (avg 0,
// count 0, PRNG reseeded, sequence numbers from 1).
control PortEpoch(in port_t port,
                  out bit<1> fresh,
                  out bit<16> epoch,
                  out bit<32> seed,
                  out bit<1> bmv2_random,
                  out bit<32> pkt_seq) {

    register<bit<16>>(PORT_SLOTS) epoch_reg;
    register<bit<32>>(PORT_SLOTS) pkt_seq_reg;

    // seed: xorshift32 seed (non-zero); bmv2_random = 1 uses BMv2's random() instead.
    action set_epoch(bit<16> epoch_id, bit<32> prng_seed, bit<1> use_bmv2_random) {
        epoch = epoch_id;
        seed = prng_seed;
        bmv2_random = use_bmv2_random;
    }

    table port_epoch {
        key = { port: exact @name("port"); }
        actions = { set_epoch; }
        default_action = set_epoch(0, 1, 0);
        size = PORT_SLOTS;
    }

    apply {
        port_epoch.apply();
        bit<16> current;
        epoch_reg.read(current, (bit<32>)port);
        pkt_seq_reg.read(pkt_seq, (bit<32>)port);
        fresh = 0;
        if (current != epoch) {
            fresh = 1;
            pkt_seq = 0;
            epoch_reg.write((bit<32>)port, epoch);
        }
        pkt_seq = pkt_seq + 1;
        pkt_seq_reg.write((bit<32>)port, pkt_seq);
    }
}

#endif
