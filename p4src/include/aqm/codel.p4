#ifndef P4AQM_CODEL_P4
#define P4AQM_CODEL_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// CoDel (RFC 8289) at dequeue, one packet per pass: control_plane/algorithms/codel.py says
// what it does, where BMv2 makes us differ from the RFC, and what each field below holds.
// The record's fields it writes, by the RFC's names:
#define CODEL_FLAGS avg          // the state after this packet: CODEL_DROPPING, ...
#define CODEL_DROP_NEXT state0   // drop_next, its low 32 bits
#define CODEL_LASTCOUNT state1   // lastcount
// and count, deq_qdepth, region, event.
const bit<32> CODEL_DROPPING = 1;
const bit<32> CODEL_ABOVE = 2;          // first_above_time holds a time
const bit<32> CODEL_AFTER_DROP = 4;     // the last packet, dropped in the dropping state
const bit<32> CODEL_AFTER_ENTRY = 8;    // the last packet, the drop that entered it
const bit<32> CODEL_AFTER_MARK = 16;    // the last packet, marked in the dropping state

// A port's CoDel parameters and the control's working values: one header (red.p4 says why).
// The parameters are read with PARAM: constants in a build for one configuration (lib.p4).
header codel_h {
    PARAM_FIELD(usec_t, target)
    PARAM_FIELD(usec_t, interval)
    PARAM_FIELD(usec_t, reentry)        // 16 intervals
    PARAM_FIELD(bit<32>, min_backlog)   // PKTS
    // The control's
    bit<48> first_above;   // USEC48, first_above_time
    bit<48> drop_next;     // USEC48
    bit<48> law_from;      // USEC48, the time this packet's control law starts from
    bit<32> law_count;     // the count it is taken for
    bit<32> law;           // USEC, interval / sqrt(law_count)
    bit<8>  ok;            // ok_to_drop
    bit<8>  need_law;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define CODEL_ACTION \
    action codel(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
                 bit<2> ecn_mode, usec_t target, usec_t interval, usec_t reentry, \
                 bit<32> min_backlog) { \
        aqm_common(CODEL_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.codel.setValid(); \
        SET_PARAM(meta.aqm.codel, target, target) \
        SET_PARAM(meta.aqm.codel, interval, interval) \
        SET_PARAM(meta.aqm.codel, reentry, reentry) \
        SET_PARAM(meta.aqm.codel, min_backlog, min_backlog) \
    }

// How AqmDispatch applies the control.
#define CODEL_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.codel, std_meta, meta.rec);

// RFC 8289's dodequeue: is the departing packet ok to drop? Its sojourn and every one
// since the first above target stayed at or above target for an interval, and the queue
// it leaves is not nearly empty. Region NONE, A (above target, not yet an interval) or B.
control CodelDodequeue(in standard_metadata_t std_meta,
                       inout codel_h v,
                       inout aqm_record_h rec) {

    action below_target() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS & ~CODEL_ABOVE;
    }

    action first_above_target() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS | CODEL_ABOVE;
        v.first_above = std_meta.egress_global_timestamp + (bit<48>)PARAM(v, interval);
        rec.region = REGION_A;
    }

    action ok_to_drop() {
        v.ok = 1;
        rec.region = REGION_B;
    }

    action above_target() {
        rec.region = REGION_A;
    }

    apply {
        if ((usec_t)std_meta.deq_timedelta < PARAM(v, target)
                || rec.deq_qdepth <= PARAM(v, min_backlog)) {
            if ((rec.CODEL_FLAGS & CODEL_ABOVE) != 0) {
                below_target();
            }
        } else if ((rec.CODEL_FLAGS & CODEL_ABOVE) == 0) {
            first_above_target();
        } else if (AT_OR_AFTER(std_meta.egress_global_timestamp, v.first_above)) {
            ok_to_drop();
        } else {
            above_target();
        }
    }
}

// RFC 8289's control_law (t + interval / sqrt(count), from the codel_law table), for the one
// time this packet may need it: the next drop_next in the dropping state after a mark, or
// after a drop when this packet is still ok to drop (the RFC's loop); on entering it, from
// now, with count restarting at count - lastcount when that is above 1 and the last
// drop_next was less than 16 intervals ago (or is ahead).
control CodelControlLaw(in port_t index,
                        in standard_metadata_t std_meta,
                        inout codel_h v,
                        inout aqm_record_h rec) {

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

    action from_drop_next() {
        v.law_from = v.drop_next;
        v.law_count = rec.count;
        v.need_law = 1;
    }

    action delta() {
        v.law_count = rec.count - rec.CODEL_LASTCOUNT;
    }

    action from_one() {
        v.law_count = 1;
    }

    action from_now() {
        v.law_from = std_meta.egress_global_timestamp;
        v.need_law = 1;
    }

    apply {
        if ((rec.CODEL_FLAGS & CODEL_DROPPING) != 0) {
            if ((rec.CODEL_FLAGS & CODEL_AFTER_MARK) != 0
                    || ((rec.CODEL_FLAGS & CODEL_AFTER_DROP) != 0 && v.ok == 1)) {
                from_drop_next();
            }
        } else {
            delta();
            if (v.law_count <= 1
                    || (AT_OR_AFTER(std_meta.egress_global_timestamp, v.drop_next)
                        && std_meta.egress_global_timestamp - v.drop_next
                           >= (bit<48>)PARAM(v, reentry))) {
                from_one();
            }
            from_now();
        }
        if (v.need_law == 1) {
            codel_law.apply();
        }
    }
}

// RFC 8289's dequeue, for the departing packet: the next pass finishes what the RFC's call
// does after a drop (control_plane/algorithms/codel.py). A signal marks the packet in an
// ECN mode if it is ECN-capable (the verdict), and counts as a drop.
control Codel(in port_t index,
              inout codel_h v,
              in standard_metadata_t std_meta,
              inout aqm_record_h rec) {

    CodelDodequeue() dodequeue;
    CodelControlLaw() control_law;
    register<bit<48>, port_t>(PORT_SLOTS) first_above_reg;
    register<bit<48>, port_t>(PORT_SLOTS) drop_next_reg;
    register<bit<32>, port_t>(PORT_SLOTS) count_reg;
    register<bit<32>, port_t>(PORT_SLOTS) lastcount_reg;
    register<bit<32>, port_t>(PORT_SLOTS) flags_reg;

    action load() {
        rec.deq_qdepth = (bit<32>)std_meta.deq_qdepth;
        first_above_reg.read(v.first_above, index);
        drop_next_reg.read(v.drop_next, index);
        count_reg.read(rec.count, index);
        lastcount_reg.read(rec.CODEL_LASTCOUNT, index);
        flags_reg.read(rec.CODEL_FLAGS, index);
    }

    action init() {
        v.first_above = 0;
        v.drop_next = 0;
        rec.count = 0;
        rec.CODEL_LASTCOUNT = 0;
        rec.CODEL_FLAGS = 0;
    }

    action store() {
        first_above_reg.write(index, v.first_above);
        drop_next_reg.write(index, v.drop_next);
        count_reg.write(index, rec.count);
        lastcount_reg.write(index, rec.CODEL_LASTCOUNT);
        flags_reg.write(index, rec.CODEL_FLAGS);
        rec.CODEL_DROP_NEXT = (bit<32>)v.drop_next;
    }

    // The packet after the drop that entered the dropping state: the one the RFC's call
    // returned, sent whatever it is.
    action sent_after_entry() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS & ~CODEL_AFTER_ENTRY;
    }

    action next_drop() {
        v.drop_next = v.law_from + (bit<48>)v.law;
    }

    action done_after() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS & ~(CODEL_AFTER_DROP | CODEL_AFTER_MARK);
    }

    action leave_dropping() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS & ~CODEL_DROPPING;
        rec.event = EVENT_DECREASE;
    }

    action drop() {
        rec.fire = 1;
    }

    action count_drop() {
        rec.count = rec.count + 1;
    }

    action after_mark() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS | CODEL_AFTER_MARK;
    }

    action after_drop() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS | CODEL_AFTER_DROP;
    }

    action enter_dropping() {
        rec.fire = 1;
        rec.event = EVENT_INCREASE;
        rec.count = v.law_count;
        rec.CODEL_LASTCOUNT = v.law_count;
        v.drop_next = v.law_from + (bit<48>)v.law;
        rec.CODEL_FLAGS = rec.CODEL_FLAGS | CODEL_DROPPING;
    }

    action after_entry() {
        rec.CODEL_FLAGS = rec.CODEL_FLAGS | CODEL_AFTER_ENTRY;
    }

    apply {
        load();
        if (rec.fresh == 1) {
            init();
        }
        dodequeue.apply(std_meta, v, rec);
        if ((rec.CODEL_FLAGS & CODEL_DROPPING) != 0 || v.ok == 1) {
            control_law.apply(index, std_meta, v, rec);
            if ((rec.CODEL_FLAGS & CODEL_DROPPING) != 0) {
                if ((rec.CODEL_FLAGS & CODEL_AFTER_ENTRY) != 0) {
                    sent_after_entry();
                } else {
                    if (v.need_law == 1) {
                        next_drop();
                    }
                    done_after();
                    if (v.ok == 0) {
                        leave_dropping();
                    } else if (AT_OR_AFTER(std_meta.egress_global_timestamp, v.drop_next)) {
                        drop();
                        if (rec.count != 0xffffffff) {
                            count_drop();
                        }
                        if (rec.ecn_mode != ECN_MODE_DROP
                                && rec.ecn_in != (bit<8>)ECN_NOT_ECT) {
                            after_mark();
                        } else {
                            after_drop();
                        }
                    }
                }
            } else {
                enter_dropping();
                if (rec.ecn_mode == ECN_MODE_DROP || rec.ecn_in == (bit<8>)ECN_NOT_ECT) {
                    after_entry();
                }
            }
        }
        store();
    }
}

#endif
