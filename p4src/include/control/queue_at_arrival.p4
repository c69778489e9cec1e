#ifndef P4AQM_QUEUE_AT_ARRIVAL_P4
#define P4AQM_QUEUE_AT_ARRIVAL_P4

#include "../headers.p4"

// Only in the program built with P4AQM_DROP_AT_ENQUEUE (the experiments' `--factor
// drop=enqueue`): ingress runs the AQM before the packet enters its queue, but v1model
// shows ingress nothing of the queue. So the queue is counted: packets ingress admitted to
// each port minus packets egress took from it. Each register has one writer (ingress or
// egress) and BMv2 locks a register for the action that accesses it, so no count is lost;
// a departure not yet counted only makes the depth one packet deeper for a moment.
register<bit<32>, port_t>(PORT_SLOTS) admitted_reg;
register<bit<32>, port_t>(PORT_SLOTS) departed_reg;

// What egress would see of the packet, as the AQM's input at arrival: the depth it finds
// (PKTS, as enq_qdepth and deq_qdepth), now as the time of every event (USEC/USEC48), no
// sojourn yet. An idle period is therefore timed from the previous arrival, not from the
// previous departure as at dequeue.
control ArrivalView(in port_t index,
                    in standard_metadata_t std_meta,
                    out standard_metadata_t view) {
    bit<32> admitted;
    bit<32> departed;

    action look() {
        admitted_reg.read(admitted, index);
        departed_reg.read(departed, index);
        view = std_meta;
        view.egress_port = std_meta.egress_spec;
        view.enq_timestamp = (bit<32>)std_meta.ingress_global_timestamp;
        view.deq_timedelta = 0;
        view.egress_global_timestamp = std_meta.ingress_global_timestamp;
    }

    apply {
        look();
        bit<32> depth = admitted - departed;
        if (depth > 0x7ffff) {
            depth = 0x7ffff;    // saturated at enq_qdepth's 19 bits
        }
        view.enq_qdepth = (bit<19>)depth;
        view.deq_qdepth = (bit<19>)depth;
    }
}

control Admit(in port_t index) {
    action admit() {
        bit<32> n;
        admitted_reg.read(n, index);
        admitted_reg.write(index, n + 1);
    }

    apply {
        admit();
    }
}

// Egress: the departure counted, and the depth the packet left behind as BMv2 saw it
// stamped for telemetry (which stamps the rest of the queue's fields as the packet leaves:
// telemetry.p4); the AQM's values are ingress's.
control Departure(in port_t index,
                  in standard_metadata_t std_meta,
                  inout aqm_record_h rec) {
    action depart() {
        bit<32> n;
        departed_reg.read(n, index);
        departed_reg.write(index, n + 1);
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
    }

    apply {
        depart();
    }
}

#endif
