#ifndef P4AQM_MARKER_P4
#define P4AQM_MARKER_P4

#include "../lib.p4"

// RED's marker (the RED family, MECN, AECN): control_plane/algorithms/red.py says the rule
// (the two-region ramp, pa = pb / (1 - count pb), ns-2's wait). Here, without division, as
// one test on s = count * pb + (1 without wait, 0 with it):
//   fire  <=>  s >= 2  or  (s >= 1  and  rnd * (2 - s) < pb)     (all FRAC32)
// with one count per group (index = port * 4 + group; the RED family has one group). The
// port's first packet of a new epoch resets every group's count (the rare branch pays for
// it, not every packet). Parameters and working values in red_h (red.p4).
// record: region, prob = pb, count (before this packet), fire.
control Marker(inout bit<32> index,    // the group's count: port * 4 + group
               inout red_h v,
               inout aqm_record_h rec) {

    register<bit<32>, bit<32>>(PORT_SLOTS * 4) count_reg;

    // Straight-line steps as actions, without `if`s (p4c would predicate those into
    // conditional expressions, dearer in BMv2 without logging than the tables and
    // conditions they replace): below the ramp a packet applies two tables, load and below.
    action load() {
        count_reg.read(rec.count, index);
    }

    // p4c makes a temporary of every register index that is not a metadata field, and BMv2
    // zeroes every temporary for every packet: so the index walks the port's four groups
    // and comes back to the packet's (index = port * 4 + rec.group).
    action reset_port() {
        rec.count = 0;
        index = index & 0xfffffffc;
        count_reg.write(index, 0);
        index = index + 1;
        count_reg.write(index, 0);
        index = index + 1;
        count_reg.write(index, 0);
        index = index + 1;
        count_reg.write(index, 0);
#ifdef P4AQM_RECORD_GROUP
        index = (index & 0xfffffffc) | (bit<32>)rec.group;
#else
        index = index & 0xfffffffc;
#endif
    }

    // Below the ramp nothing fires (region, prob and fire stay 0) and the count restarts.
    action below() {
        count_reg.write(index, 0);
    }

    action store() {
        rec.prob = (frac32_t)v.pb;
        count_reg.write(index, v.next);
    }

    apply {
        load();
        if (rec.fresh == 1) {
            reset_port();
        }
        if (rec.avg < v.t0) {
            below();
        } else {
            if (rec.avg < v.RED_T1) {
                rec.region = REGION_A;
                v.pb = ((bit<64>)v.RED_SLOPE_A * (bit<64>)(rec.avg - v.t0)) >> 16;
            } else if (rec.avg < v.RED_T2) {
                rec.region = REGION_B;
                v.pb = (bit<64>)v.RED_BASE_B
                       + (((bit<64>)v.RED_SLOPE_B * (bit<64>)(rec.avg - v.RED_T1)) >> 16);
            } else {
                rec.region = REGION_FORCED;
                v.pb = (bit<64>)FRAC32_ONE;
            }
            if (v.pb > (bit<64>)FRAC32_ONE) {
                v.pb = (bit<64>)FRAC32_ONE;
            }
            if (rec.region != REGION_FORCED) {
                v.spent = (bit<64>)rec.count * v.pb + ((bit<64>)(v.RED_WAIT ^ 1) << 32);
                if (v.spent >= 64w0x200000000
                        || (v.spent >= 64w0x100000000
                            && (bit<64>)rec.rnd * (64w0x200000000 - v.spent) < (v.pb << 32))) {
                    rec.fire = 1;
                } else if (rec.count == 0xffffffff) {
                    v.next = rec.count;
                } else {
                    v.next = rec.count + 1;
                }
            }
            store();
        }
    }
}

#endif
