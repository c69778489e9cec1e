#ifndef P4AQM_TELEMETRY_P4
#define P4AQM_TELEMETRY_P4

#include "../headers.p4"

// Live AQM state reaches the controller as PacketIn: a packet due for export is cloned
// (egress to egress) to TELEMETRY_SESSION, whose replica goes to CPU_PORT; the clone's
// egress pass (TelemetryFormat) turns it into a bare telemetry header.
control TelemetryExport(in port_t index,
                        in headers_t hdr,
                        in standard_metadata_t std_meta,
                        inout aqm_record_h rec,
                        inout aqm_export_h v,
                        inout aqm_stamp_h stamp) {

    // The port's AQM packets and records so far: counted only while the port has a
    // telemetry_config entry, so that a port without telemetry pays nothing for them.
    register<bit<32>, port_t>(PORT_SLOTS) pkt_seq_reg;
    register<bit<32>, port_t>(PORT_SLOTS) tele_seq_reg;
    register<usec_t, port_t>(PORT_SLOTS) last_export_reg;

    // interval_us = 0 exports every packet (conformance tests); otherwise at most one
    // record per interval, on the first packet after it. What the decision needs is loaded
    // here: p4c would make a table of straight-line code of its own, and it does not
    // propagate these values as expressions into the register calls (temporaries).
    action export(usec_t interval_us) {
        v.setValid();
        v.interval = interval_us;
        v.now = std_meta.enq_timestamp + std_meta.deq_timedelta;
        pkt_seq_reg.read(v.pkt_seq, index);
        tele_seq_reg.read(v.seq, index);
        last_export_reg.read(v.last, index);
    }

    action no_export() {
    }

    action restart_count() {
        v.pkt_seq = 0;
        v.seq = 0;
    }

    action count_packet() {
        v.pkt_seq = v.pkt_seq + 1;
        pkt_seq_reg.write(index, v.pkt_seq);
    }

    table telemetry_config {
        key = { index: exact @name("port"); }
        actions = { export; @defaultonly no_export; }
        const default_action = no_export();
        size = PORT_SLOTS;
    }

    // The queue's fields as the packet leaves it, in both builds.
    action stamp_packet() {
        stamp.setValid();
        stamp.port = (bit<16>)std_meta.egress_port;
        stamp.enq_ts = std_meta.enq_timestamp;
        stamp.deq_timedelta = std_meta.deq_timedelta;
        stamp.egress_ts = std_meta.egress_global_timestamp;
        stamp.qdepth = (bit<32>)std_meta.enq_qdepth;
        stamp.pkt_len = std_meta.packet_length;
    }

    action stamp_ipv4() {
        stamp.ip_id = hdr.ipv4.identification;
        stamp.ecn_out = (bit<8>)hdr.ipv4.ecn;
    }

    apply {
        if (telemetry_config.apply().hit) {
            if (rec.fresh == 1) {
                restart_count();
            }
            count_packet();
            if (v.seq == 0 || v.now - v.last >= v.interval) {
                v.seq = v.seq + 1;
                tele_seq_reg.write(index, v.seq);
                last_export_reg.write(index, v.now);
                stamp_packet();
                if (hdr.ipv4.isValid()) {
                    stamp_ipv4();
                }
                // The clone copies the valid headers, meta.rec, meta.export and meta.stamp
                // among them.
                clone(CloneType.E2E, TELEMETRY_SESSION);
            }
        }
    }
}

// The record's fields only some algorithms write: the profile's (profile.p4). Those a
// profile's record lacks (aqm_types.p4) stay 0, as made valid.
#define AQM_EXPORT_FIELD(field) hdr.telemetry.field = rec.field;

control TelemetryFormat(inout headers_t hdr,
                        in aqm_record_h rec,
                        in aqm_export_h export,
                        in aqm_stamp_h stamp) {
    apply {
        hdr.telemetry.setValid();
        hdr.telemetry.port = stamp.port;
        hdr.telemetry.epoch = rec.epoch;
        hdr.telemetry.pkt_seq = export.pkt_seq;
        hdr.telemetry.tele_seq = export.seq;
        hdr.telemetry.enq_ts = stamp.enq_ts;
        hdr.telemetry.deq_timedelta = stamp.deq_timedelta;
        hdr.telemetry.egress_ts = stamp.egress_ts;
        hdr.telemetry.qdepth = stamp.qdepth;
#ifdef P4AQM_WITH_DRAWS
        hdr.telemetry.rnd = rec.rnd;
#endif
        hdr.telemetry.ip_id = stamp.ip_id;
        hdr.telemetry.region = rec.region;
        hdr.telemetry.outcome = rec.outcome;
        hdr.telemetry.ecn_in = rec.ecn_in;
        hdr.telemetry.ecn_out = stamp.ecn_out;
        hdr.telemetry.pkt_len = stamp.pkt_len;
        P4AQM_FOR_EACH_RECORD_FIELD(AQM_EXPORT_FIELD)
        // Keep only the telemetry header, which the deparser emits first: the PacketIn
        // carries no payload. (Not by making the packet's headers invalid: a header passed
        // whole to a primitive makes BMv2 keep every field of it as a number, which then
        // costs every packet's parser about 90 instructions a field.)
        truncate(TELEMETRY_BYTES);
    }
}

#endif
