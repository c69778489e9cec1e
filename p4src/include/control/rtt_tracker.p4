#ifndef P4AQM_RTT_TRACKER_P4
#define P4AQM_RTT_TRACKER_P4

#include "../headers.p4"

// Per-flow round-trip times measured in the switch from TCP timestamps, in the spirit of
// Dart (Kagan et al., SIGCOMM 2022); control_plane/rtt_tracker.py is its golden model.
//
// A TCP packet A -> B carrying TSval x is remembered at the time it passes (the packet
// tracker, keyed by the flow's direction and x). When a packet B -> A echoes x in TSecr,
// now - then is one sample of the leg switch -> B -> switch: the leg on the side of the
// echoing packet's sender. The flow's RTT is the sum of its two legs (each smoothed as
// TCP's srtt, 1/8 per sample), so it is the same for both directions and includes the
// queueing this switch adds.
//
// Both tables are hash-indexed registers (no division: a multiplicative hash, masked):
//   packet tracker  PT_SLOTS entries of (signature, time); an entry older than PT_TIMEOUT
//                   is stale and may be overwritten; a live entry of another key is a
//                   collision (the new one is not remembered); a match is consumed;
//   flow table      FT_SLOTS entries of (signature, last seen, two legs); a slot idle
//                   for FT_TIMEOUT is taken over by the next flow that hashes there.
// Every event is counted in rtt_events. Times are the low 32 bits of the ingress
// timestamp (USEC, differences modulo 2^32). Tracking is off until the controller sets
// rtt_config's default action to track (an AECN port that measures RTTs).
#define PT_SLOTS 65536
#define FT_SLOTS 65536
const bit<32> PT_TIMEOUT = 4000000;   // USEC: no RTT sample longer than 4 s
const bit<32> FT_TIMEOUT = 10000000;  // USEC
const bit<32> RTT_SAMPLE = 0;          // rtt_events indexes
const bit<32> RTT_PT_COLLISION = 1;
const bit<32> RTT_PT_STALE = 2;
const bit<32> RTT_FLOW_NEW = 3;
const bit<32> RTT_FLOW_COLLISION = 4;
#define RTT_EVENTS 5
const bit<32> FLOW_SALT = 0x5bd1e995;

// The multiplicative hash of a packet-tracker or flow key (three 32-bit words).
#define RTT_HASH(a, b, c) \
    ((a) * 0x9E3779B1 ^ (b) * 0x85EBCA6B ^ (c) * 0xC2B2AE35)

// The keys are computed in an action, from where p4c does not propagate them as
// expressions into the register calls (each such argument would become a temporary).
header rtt_vars_h {
    bit<32> now;        // USEC, low 32 bits
    bit<32> hosts;      // src ^ dst
    bit<32> h;          // a key's hash
    bit<32> side;       // 0: this packet's sender is the flow's side 0
    bit<32> sig;        // this packet's TSval: signature (hash | 1) ...
    bit<32> slot;       // ... and packet-tracker slot
    bit<32> echo_sig;   // the TSval its TSecr echoes
    bit<32> echo_slot;
    bit<32> fsig;       // the flow
    bit<32> fslot;
    bit<32> mine;       // ft_leg index of this packet's sender's leg ...
    bit<32> other;      // ... and of the other side's
    bit<32> stored;     // what a slot holds
    bit<32> then;
    bit<32> sample;
    bit<32> seen;
    bit<32> leg;
    bit<32> far;
}

control RttTracker(in headers_t hdr,
                   in bit<48> now48,
                   inout bit<32> rtt) {   // 0 on entry (metadata)

    register<bit<32>, bit<32>>(PT_SLOTS) pt_sig;
    register<bit<32>, bit<32>>(PT_SLOTS) pt_time;
    register<bit<32>, bit<32>>(FT_SLOTS) ft_sig;
    register<bit<32>, bit<32>>(FT_SLOTS) ft_seen;
    register<bit<32>, bit<32>>(FT_SLOTS * 2) ft_leg;   // USEC, smoothed; 0: no sample yet
    counter<bit<32>>(RTT_EVENTS, CounterType.packets) rtt_events;
    rtt_vars_h v;

    action track() {
    }

    action keys() {
        // Made valid, all zero (the sample and the legs start at 0), and invalid again
        // below: a valid header counts in BMv2's packet length.
        v.setValid();
        v.now = (bit<32>)now48;
        v.hosts = hdr.ipv4.src_addr ^ hdr.ipv4.dst_addr;
        v.h = RTT_HASH(v.hosts, hdr.tcp.src_port ++ hdr.tcp.dst_port, hdr.tcp_ts.tsval);
        v.h = v.h ^ (v.h >> 15);
        v.sig = v.h | 1;
        v.slot = v.h & (PT_SLOTS - 1);
        v.h = RTT_HASH(v.hosts, hdr.tcp.dst_port ++ hdr.tcp.src_port, hdr.tcp_ts.tsecr);
        v.h = v.h ^ (v.h >> 15);
        v.echo_sig = v.h | 1;
        v.echo_slot = v.h & (PT_SLOTS - 1);
        // The same flow slot from both directions; this packet's sender is side 0 when its
        // address (then port) is the lower.
        v.h = RTT_HASH(v.hosts, (hdr.tcp.src_port + hdr.tcp.dst_port)
                                ++ (hdr.tcp.src_port ^ hdr.tcp.dst_port), FLOW_SALT);
        v.h = v.h ^ (v.h >> 15);
        v.fsig = v.h | 1;
        v.fslot = v.h & (FT_SLOTS - 1);
        v.side = (hdr.ipv4.src_addr < hdr.ipv4.dst_addr
                  || (hdr.ipv4.src_addr == hdr.ipv4.dst_addr
                      && hdr.tcp.src_port < hdr.tcp.dst_port)) ? 32w0 : 32w1;
        v.mine = v.fslot * 2 + v.side;
        v.other = v.fslot * 2 + (v.side ^ 1);
    }

    table rtt_config {
        actions = { track; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (hdr.tcp_ts.isValid()) {
            // A keyless table never hits: its default action says whether to track.
            switch (rtt_config.apply().action_run) {
            track: {
                keys();
                // 1. Remember this packet's TSval (the first packet of a TSval keeps it).
                pt_sig.read(v.stored, v.slot);
                pt_time.read(v.then, v.slot);
                if (v.stored == 0 || v.now - v.then > PT_TIMEOUT) {
                    if (v.stored != 0) {
                        rtt_events.count(RTT_PT_STALE);
                    }
                    pt_sig.write(v.slot, v.sig);
                    pt_time.write(v.slot, v.now);
                } else if (v.stored != v.sig) {
                    rtt_events.count(RTT_PT_COLLISION);
                }

                // 2. A TSecr echoes a TSval the other direction carried: one sample of the
                //    leg on this packet's sender's side.
                if (hdr.tcp_ts.tsecr != 0) {
                    pt_sig.read(v.stored, v.echo_slot);
                    pt_time.read(v.then, v.echo_slot);
                    if (v.stored == v.echo_sig && v.now - v.then <= PT_TIMEOUT) {
                        v.sample = v.now - v.then;
                        pt_sig.write(v.echo_slot, 0);
                        rtt_events.count(RTT_SAMPLE);
                    }
                }

                // 3. The flow keeps one smoothed leg per side.
                ft_sig.read(v.stored, v.fslot);
                ft_seen.read(v.seen, v.fslot);
                if (v.stored != v.fsig) {
                    if (v.stored == 0 || v.now - v.seen > FT_TIMEOUT) {
                        v.stored = v.fsig;
                        ft_sig.write(v.fslot, v.fsig);
                        ft_leg.write(v.mine, 0);
                        ft_leg.write(v.other, 0);
                        rtt_events.count(RTT_FLOW_NEW);
                    } else {
                        rtt_events.count(RTT_FLOW_COLLISION);
                    }
                } else {
                    ft_leg.read(v.leg, v.mine);
                    ft_leg.read(v.far, v.other);
                }
                if (v.stored == v.fsig) {
                    if (v.sample != 0) {
                        if (v.leg == 0) {
                            v.leg = v.sample;
                        } else if (v.sample >= v.leg) {
                            v.leg = v.leg + ((v.sample - v.leg) >> 3);
                        } else {
                            v.leg = v.leg - ((v.leg - v.sample) >> 3);
                        }
                        ft_leg.write(v.mine, v.leg);
                    }
                    ft_seen.write(v.fslot, v.now);
                    if (v.leg != 0 && v.far != 0) {
                        rtt = v.leg + v.far;
                    }
                }
                v.setInvalid();
            }
            }
        }
    }
}

#endif
