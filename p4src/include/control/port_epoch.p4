#ifndef P4AQM_PORT_EPOCH_P4
#define P4AQM_PORT_EPOCH_P4

#include "../headers.p4"

// Registers cannot be written over P4Runtime, so a port's AQM state is reset by writing a
// new epoch number (with the aqm_config entry): the first packet that sees it starts from
// a clean state (algorithm state 0, PRNG reseeded, sequence numbers from 1).
control PortEpoch(in port_t port,
                  in bit<16> epoch,
                  out bit<1> fresh,
                  out bit<32> pkt_seq) {

    register<bit<16>>(PORT_SLOTS) epoch_reg;
    register<bit<32>>(PORT_SLOTS) pkt_seq_reg;

    apply {
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
