// The benchmark's baseline: the least a v1model program can do to forward a packet —
// one exact table from ingress port to egress port, nothing in egress.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser TrivialParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control TrivialIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std_meta) {
    action forward(bit<9> port) { std_meta.egress_spec = port; }
    action drop() { mark_to_drop(std_meta); }
    table port_forward {
        key = { std_meta.ingress_port: exact @name("ingress_port"); }
        actions = { forward; drop; }
        const default_action = drop();
    }
    apply { port_forward.apply(); }
}

control TrivialEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std_meta) {
    apply { }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control TrivialDeparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr.ethernet); }
}

V1Switch(TrivialParser(), NoChecksum(), TrivialIngress(), TrivialEgress(), NoChecksum(),
         TrivialDeparser()) main;
