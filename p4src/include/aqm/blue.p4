#ifndef P4AQM_BLUE_P4
#define P4AQM_BLUE_P4

#include "../aqm_types.p4"
#include "../lib.p4"

// BLUE (Feng et al. 2002): control_plane/algorithms/blue.py says what it does and what
// each field below holds. The record's fields it writes, by the paper's names:
#define BLUE_PM prob        // p_m (FRAC32)
#define BLUE_LOST state0    // packets BMv2 dropped at a full queue just before this one
// and arr_seq, region, event.

// A port's BLUE parameters and the control's working values: one header (red.p4 says why).
header blue_h {
    frac32_t d1;
    frac32_t d2;
    usec_t   freeze_time;
    bit<32>  threshold;
    // The control's
    bit<48> arrival;       // USEC48
    bit<48> last_change;   // last_update
    bit<32> last_seq;
    bit<64> sum;           // FRAC32 widened
    bit<8>  due;
}

// The aqm_config action, expanded inside AqmDispatch (aqm_dispatch.p4): declared there,
// an action writes the port's parameter headers without p4c copying them.
#define BLUE_ACTION \
    action blue(bit<16> epoch_id, bit<32> prng_seed, bit<32> limit, \
                bit<2> ecn_mode, frac32_t d1, frac32_t d2, usec_t freeze_time, \
                bit<32> threshold) { \
        aqm_common(BLUE_ID, ecn_mode, ECN_CE, limit, epoch_id, prng_seed); \
        meta.aqm.blue.setValid(); \
        meta.aqm.blue.d1 = d1; \
        meta.aqm.blue.d2 = d2; \
        meta.aqm.blue.freeze_time = freeze_time; \
        meta.aqm.blue.threshold = threshold; \
    }

// How AqmDispatch applies the control.
#define BLUE_APPLY(INSTANCE) INSTANCE.apply(std_meta.egress_port, meta.aqm.blue, std_meta, meta.arr_seq, meta.rec);

control Blue(in port_t index,
             inout blue_h v,
             in standard_metadata_t std_meta,
             in bit<32> arr_seq,
             inout aqm_record_h rec) {

    register<frac32_t, port_t>(PORT_SLOTS) pm_reg;
    register<bit<48>, port_t>(PORT_SLOTS) last_update_reg;
    register<bit<32>, port_t>(PORT_SLOTS) last_seq_reg;

    action load() {
        pm_reg.read(rec.BLUE_PM, index);
        last_update_reg.read(v.last_change, index);
        last_seq_reg.read(v.last_seq, index);
    }

    action init() {
        rec.BLUE_PM = 0;
        v.last_change = 0;
        v.last_seq = arr_seq - 1;
    }

    // The packet's arrival (its departure less its sojourn), and the packets BMv2 dropped
    // at its full queue before it (the gap in the arrival numbers ingress stamps).
    action arrive() {
        rec.arr_seq = arr_seq;
        rec.BLUE_LOST = arr_seq - v.last_seq - 1;
        v.arrival = std_meta.egress_global_timestamp - (bit<48>)std_meta.deq_timedelta;
    }

    action store() {
        pm_reg.write(index, rec.BLUE_PM);
        last_update_reg.write(index, v.last_change);
        last_seq_reg.write(index, arr_seq);
    }

    apply {
        load();
        if (rec.fresh == 1) {
            init();
        }
        arrive();
        // p_m changes at most once per freeze_time.
        if (AT_OR_AFTER(v.arrival, v.last_change)
                && v.arrival - v.last_change > (bit<48>)v.freeze_time) {
            v.due = 1;
        }
        // A loss event: a packet found `threshold` or more queued (threshold = limit: an
        // overflow at the limit), or BMv2 dropped packets at a full queue before it.
        if (rec.BLUE_LOST != 0 || (bit<32>)std_meta.enq_qdepth >= v.threshold) {
            rec.event = EVENT_HELD;
            if (v.due == 1) {
                // p_m += d1, at most 1.
                v.sum = (bit<64>)rec.BLUE_PM + (bit<64>)v.d1;
                if (v.sum > (bit<64>)FRAC32_ONE) {
                    v.sum = (bit<64>)FRAC32_ONE;
                }
                rec.BLUE_PM = (frac32_t)v.sum;
                v.last_change = v.arrival;
                rec.event = EVENT_INCREASE;
            }
        // The link idle: a packet found the queue empty.
        } else if (std_meta.enq_qdepth == 0) {
            rec.event = EVENT_HELD;
            if (v.due == 1) {
                // p_m -= d2, at least 0.
                if (v.d2 < rec.BLUE_PM) {
                    rec.BLUE_PM = rec.BLUE_PM - v.d2;
                } else {
                    rec.BLUE_PM = 0;
                }
                v.last_change = v.arrival;
                rec.event = EVENT_DECREASE;
            }
        }
        store();

        // Every packet is marked (ECT) or dropped (Not-ECT) with p_m.
        if (rec.BLUE_PM != 0) {
            rec.region = REGION_A;
        }
        if (rec.rnd < rec.BLUE_PM) {
            rec.fire = 1;
        }
    }
}

#endif
