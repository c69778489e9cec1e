#ifndef P4AQM_TELEMETRY_P4
#define P4AQM_TELEMETRY_P4

#include "../headers.p4"

// Live AQM state reaches the controller as PacketIn: a packet due for export is cloned
// (egress to egress) to TELEMETRY_SESSION, whose replica goes to CPU_PORT; the clone's
// egress pass (TelemetryFormat) turns it into a bare telemetry header.
header export_vars_h {
    bit<32> seq;
    usec_t  last;
    usec_t  now;
    usec_t  interval;
}

control TelemetryExport(in bit<32> index,
                        in bit<1> fresh,
                        in standard_metadata_t std_meta,
                        inout aqm_record_t rec) {

    register<bit<32>>(PORT_SLOTS) tele_seq_reg;
    register<usec_t>(PORT_SLOTS) last_export_reg;
    export_vars_h v;

    // interval_us = 0 exports every packet (conformance tests); otherwise at most one
    // record per interval, on the first packet after it.
    action export(usec_t interval_us) {
        v.interval = interval_us;
    }

    action no_export() {
        v.interval = 0;
    }

    table telemetry_config {
        key = { index: exact @name("port"); }
        actions = { export; @defaultonly no_export; }
        const default_action = no_export();
        size = PORT_SLOTS;
    }

    // Straight-line code in an action: p4c does not propagate its values as expressions
    // into the register calls (each would become a temporary).
    action load() {
        v.now = std_meta.enq_timestamp + std_meta.deq_timedelta;
        tele_seq_reg.read(v.seq, index);
        last_export_reg.read(v.last, index);
    }

    apply {
        v.setValid();
        if (telemetry_config.apply().hit) {
            load();
            if (fresh == 1) {
                v.seq = 0;
            }
            if (v.seq == 0 || v.now - v.last >= v.interval) {
                v.seq = v.seq + 1;
                rec.tele_seq = v.seq;
                tele_seq_reg.write(index, v.seq);
                last_export_reg.write(index, v.now);
                clone_preserving_field_list(CloneType.E2E, TELEMETRY_SESSION, FL_TELEMETRY);
            }
        }
    }
}

control TelemetryFormat(inout headers_t hdr,
                        in aqm_record_t rec) {
    apply {
        hdr.telemetry.setValid();
        hdr.telemetry.port = rec.port;
        hdr.telemetry.epoch = rec.epoch;
        hdr.telemetry.pkt_seq = rec.pkt_seq;
        hdr.telemetry.tele_seq = rec.tele_seq;
        hdr.telemetry.enq_ts = rec.enq_ts;
        hdr.telemetry.deq_timedelta = rec.deq_timedelta;
        hdr.telemetry.egress_ts = rec.egress_ts;
        hdr.telemetry.qdepth = rec.qdepth;
        hdr.telemetry.deq_qdepth = rec.deq_qdepth;
        hdr.telemetry.arr_seq = rec.arr_seq;
        hdr.telemetry.avg = rec.avg;
        hdr.telemetry.prob = rec.prob;
        hdr.telemetry.count = rec.count;
        hdr.telemetry.rnd = rec.rnd;
        hdr.telemetry.state0 = rec.state0;
        hdr.telemetry.state1 = rec.state1;
        hdr.telemetry.ingress_ts = rec.ingress_ts;
        hdr.telemetry.rtt = rec.rtt;
        hdr.telemetry.ip_id = rec.ip_id;
        hdr.telemetry.event = rec.event;
        hdr.telemetry.group = rec.group;
        hdr.telemetry.region = rec.region;
        hdr.telemetry.outcome = rec.outcome;
        hdr.telemetry.ecn_in = rec.ecn_in;
        hdr.telemetry.ecn_out = rec.ecn_out;
        hdr.telemetry.pkt_len = rec.pkt_len;
        hdr.ethernet.setInvalid();
        hdr.ipv4.setInvalid();
        hdr.ipv4_options.setInvalid();
        hdr.tcp.setInvalid();
        hdr.tcp_ts.setInvalid();
        hdr.udp.setInvalid();
        // Keep only the telemetry header: the PacketIn carries no payload.
        truncate(TELEMETRY_BYTES);
    }
}

#endif
