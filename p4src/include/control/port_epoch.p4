#ifndef P4AQM_PORT_EPOCH_P4
#define P4AQM_PORT_EPOCH_P4

#include "../headers.p4"

// Registers cannot be written over P4Runtime, so a port's AQM state is reset by writing a
// new epoch number (with the aqm_config entry): the first packet that sees it starts from
// a clean state (algorithm state 0, PRNG reseeded, sequence numbers from 1). `fresh` is 0
// on entry (aqm_common_h) and set for that packet.
control PortEpoch(in bit<32> index,
                  in bit<16> epoch,
                  inout bit<1> fresh,
                  inout aqm_record_h rec) {

    register<bit<16>>(PORT_SLOTS) epoch_reg;
    register<bit<32>>(PORT_SLOTS) pkt_seq_reg;

    apply {
        epoch_reg.read(rec.epoch, index);
        pkt_seq_reg.read(rec.pkt_seq, index);
        if (rec.epoch != epoch) {
            fresh = 1;
            rec.epoch = epoch;
            rec.pkt_seq = 0;
            epoch_reg.write(index, epoch);
        }
        rec.pkt_seq = rec.pkt_seq + 1;
        pkt_seq_reg.write(index, rec.pkt_seq);
    }
}

#endif
