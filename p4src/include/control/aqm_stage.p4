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
                 inout standard_metadata_t std_meta) {
    AqmDispatch() aqm;
    Verdict() verdict;

    apply {
        aqm.apply(hdr, std_meta, meta);
        verdict.apply(meta.port_index, meta.group_index, meta.aqm.common, hdr, std_meta,
                      meta.rec);
    }
}

#endif
