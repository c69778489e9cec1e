#ifndef P4AQM_AQM_STAGE_P4
#define P4AQM_AQM_STAGE_P4

#include "../headers.p4"
#include "aqm_dispatch.p4"
#include "verdict.p4"

// The port's AQM on one packet: its algorithm, and its decision carried out. Egress runs
// it as the packet leaves its queue, so a packet it drops has used a service slot of
// BMv2's rate-limited queue; built with P4AQM_DROP_AT_ENQUEUE, ingress runs it before the
// packet enters the queue (queue_at_arrival.p4), where Linux and ns-2 drop.
control AqmStage(inout headers_t hdr,
                 inout local_metadata_t meta,
                 inout standard_metadata_t std_meta,
                 out bit<1> fresh) {
    AqmDispatch() aqm;
    Verdict() verdict;

    apply {
        bit<1> fire;
        bit<2> ecn = ECN_NOT_ECT;
        if (hdr.ipv4.isValid()) {
            ecn = hdr.ipv4.ecn;
        }
        aqm.apply(hdr, ecn, std_meta, meta, fresh, fire);
        verdict.apply(meta.port_index, meta.group_index, meta.aqm.common, fire == 1, ecn, hdr,
                      std_meta, meta.rec);
    }
}

#endif
