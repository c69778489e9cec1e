#ifndef P4AQM_CODEL_P4
#define P4AQM_CODEL_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// CoDel (RFC 8289, control_plane/algorithms/codel.py) at dequeue, one packet per pass.
// dodequeue: a packet is ok to drop when its sojourn (deq_timedelta) and every sojourn
// since the first one above target stayed >= target for an interval, unless the queue it
// leaves is nearly empty (at most min_backlog packets: the RFC's one MTU in a queue that
// serves packets). The RFC's dequeue() drops a packet and dequeues the next within one
// call; here the next packet is the next pass, which finishes what the call would have
// done, told by `after`:
//   AFTER_DROP   the last packet was dropped in the dropping state: drop_next advances by
//                the control law only if this one is still ok to drop (the RFC's loop);
//   AFTER_ENTRY  the last packet was the drop that entered the dropping state: this one
//                is the packet that call returned (sent, its ok ignored);
//   AFTER_MARK   the last packet was marked (ECN) in the dropping state: drop_next
//                advances now, before this one is judged (Linux advances it at the mark;
//                the schedule is the same, with one control law per packet).
// Re-entry (Linux's, which the RFC's pseudocode gives): count restarts at count - lastcount
// when that is > 1 and the last drop_next was less than 16 intervals ago (or is ahead).
// The control law t + interval / sqrt(count) is the codel_law table's, keyed by count
// (LPM: every count below 32 exact, then 32 buckets per octave, interpolated), in USEC.
const bit<32> CODEL_DROPPING = 1;
const bit<32> CODEL_ABOVE = 2;          // first_above holds a time
const bit<32> CODEL_AFTER_DROP = 4;
const bit<32> CODEL_AFTER_ENTRY = 8;
const bit<32> CODEL_AFTER_MARK = 16;

// A port's CoDel parameters and the control's working values: one header (red.p4 says why).
header codel_h {
    usec_t  target;
    usec_t  interval;
    usec_t  reentry;       // 16 intervals
    bit<32> min_backlog;   // PKTS
    // The control's (its count, lastcount and flags are the record's count, state1 and
    // avg: what it exports, without a copy)
    bit<48> first_above;   // USEC48
    bit<48> drop_next;     // USEC48
    bit<48> law_from;      // USEC48, where this packet's control law starts
    bit<48> since;         // USEC48, now - drop_next
    bit<32> law_count;     // the count the control law is taken for
    bit<32> law;           // USEC, interval / sqrt(law_count)
    bit<8>  ok;            // ok to drop
    bit<8>  need_law;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define CODEL_ACTION \
    action codel(bit<16> epoch_id, bit<32> prng_seed, bit<1> use_bmv2_random, bit<32> limit, \
                 bit<2> ecn_mode, usec_t target, usec_t interval, usec_t reentry, \
                 bit<32> min_backlog) { \
        aqm_common(CODEL_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed, \
                   use_bmv2_random); \
        meta.aqm.codel.setValid(); \
        meta.aqm.codel.target = target; \
        meta.aqm.codel.interval = interval; \
        meta.aqm.codel.reentry = reentry; \
        meta.aqm.codel.min_backlog = min_backlog; \
    }

// How AqmDispatch applies the control.
#define CODEL_APPLY(INSTANCE) INSTANCE.apply(meta.port_index, meta.aqm.codel, std_meta, meta.rec);

// record: deq_qdepth, count = count, state0 = drop_next (low 32 bits of USEC48),
// state1 = lastcount, avg = flags (CODEL_*) after this packet, region = NONE (sojourn below
// target or queue nearly empty), A (above target for less than an interval) or B (ok to
// drop), event = INCREASE when it entered the dropping state, DECREASE when it left it.
// A packet below target that changes nothing (most of them) applies two tables and pays
// four conditions.
control Codel(in bit<32> index,
              inout codel_h v,
              in standard_metadata_t std_meta,
              inout aqm_record_h rec) {

    register<bit<48>>(PORT_SLOTS) first_above_reg;
    register<bit<48>>(PORT_SLOTS) drop_next_reg;
    register<bit<32>>(PORT_SLOTS) count_reg;
    register<bit<32>>(PORT_SLOTS) lastcount_reg;
    register<bit<32>>(PORT_SLOTS) flags_reg;

    action law(usec_t start, usec_t drop, bit<8> shift, bit<32> mask) {
        v.law = INTERPOLATE(start, drop, v.law_count & mask, shift);
    }

    table codel_law {
        key = {
            index: exact @name("port");
            v.law_count: lpm @name("bucket");
        }
        actions = { law; @defaultonly NoAction; }
        const default_action = NoAction();
        size = LOOKUP_ENTRIES;
    }

    action load() {
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
        first_above_reg.read(v.first_above, index);
        drop_next_reg.read(v.drop_next, index);
        count_reg.read(rec.count, index);
        lastcount_reg.read(rec.state1, index);
        flags_reg.read(rec.avg, index);
    }

    action store() {
        first_above_reg.write(index, v.first_above);
        drop_next_reg.write(index, v.drop_next);
        count_reg.write(index, rec.count);
        lastcount_reg.write(index, rec.state1);
        flags_reg.write(index, rec.avg);
        rec.state0 = (bit<32>)v.drop_next;
    }

    apply {
        load();
        if (rec.fresh == 1) {
            v.first_above = 0;
            v.drop_next = 0;
            rec.count = 0;
            rec.state1 = 0;
            rec.avg = 0;
        }

        // dodequeue()
        if ((usec_t)std_meta.deq_timedelta < v.target
                || rec.deq_qdepth <= v.min_backlog) {
            if ((rec.avg & CODEL_ABOVE) != 0) {
                rec.avg = rec.avg & ~CODEL_ABOVE;
            }
        } else if ((rec.avg & CODEL_ABOVE) == 0) {
            rec.avg = rec.avg | CODEL_ABOVE;
            v.first_above = std_meta.egress_global_timestamp + (bit<48>)v.interval;
            rec.region = REGION_A;
        } else if (std_meta.egress_global_timestamp - v.first_above <= 0x7fffffffffff) {
            v.ok = 1;
            rec.region = REGION_B;
        } else {
            rec.region = REGION_A;
        }

        if ((rec.avg & CODEL_DROPPING) != 0 || v.ok == 1) {
            // The one control law this packet may need, before the state machine reads it.
            if ((rec.avg & CODEL_DROPPING) != 0) {
                if ((rec.avg & CODEL_AFTER_MARK) != 0
                        || ((rec.avg & CODEL_AFTER_DROP) != 0 && v.ok == 1)) {
                    v.law_from = v.drop_next;
                    v.law_count = rec.count;
                    v.need_law = 1;
                }
            } else {
                v.since = std_meta.egress_global_timestamp - v.drop_next;
                v.law_count = rec.count - rec.state1;
                if (v.law_count <= 1
                        || (v.since < 0x800000000000 && v.since >= (bit<48>)v.reentry)) {
                    v.law_count = 1;
                }
                v.law_from = std_meta.egress_global_timestamp;
                v.need_law = 1;
            }
            if (v.need_law == 1) {
                codel_law.apply();
            }

            // An ECN mode and an ECN-capable packet: a signal marks it.
            if ((rec.avg & CODEL_DROPPING) != 0) {
                if ((rec.avg & CODEL_AFTER_ENTRY) != 0) {
                    rec.avg = rec.avg & ~CODEL_AFTER_ENTRY;
                } else {
                    if (v.need_law == 1) {
                        v.drop_next = v.law_from + (bit<48>)v.law;
                    }
                    rec.avg = rec.avg & ~(CODEL_AFTER_DROP | CODEL_AFTER_MARK);
                    if (v.ok == 0) {
                        rec.avg = rec.avg & ~CODEL_DROPPING;
                        rec.event = EVENT_DECREASE;
                    } else if (std_meta.egress_global_timestamp - v.drop_next
                               <= 0x7fffffffffff) {
                        rec.fire = 1;
                        if (rec.count != 0xffffffff) {
                            rec.count = rec.count + 1;
                        }
                        if (rec.ecn_mode != ECN_MODE_DROP
                                && rec.ecn_in != (bit<8>)ECN_NOT_ECT) {
                            rec.avg = rec.avg | CODEL_AFTER_MARK;
                        } else {
                            rec.avg = rec.avg | CODEL_AFTER_DROP;
                        }
                    }
                }
            } else {
                rec.fire = 1;
                rec.event = EVENT_INCREASE;
                rec.count = v.law_count;
                rec.state1 = v.law_count;
                v.drop_next = v.law_from + (bit<48>)v.law;
                rec.avg = rec.avg | CODEL_DROPPING;
                if (rec.ecn_mode == ECN_MODE_DROP || rec.ecn_in == (bit<8>)ECN_NOT_ECT) {
                    rec.avg = rec.avg | CODEL_AFTER_ENTRY;
                }
            }
        }
        store();
    }
}

#endif
