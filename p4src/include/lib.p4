#ifndef P4AQM_LIB_P4
#define P4AQM_LIB_P4

#include "defines.p4"

// What the algorithms share: lookup-table interpolation and a clock for periodic updates.
// (A macro, not a function: p4c gives each function call temporaries, and temporaries are
// metadata that every packet pays for; see defines.p4.)

// Linear interpolation inside one bucket of a lookup table (control_plane/lookup.py): the
// value at the bucket's start minus its drop across the bucket, scaled by how far into the
// bucket (offset < 2^shift <= 2^31) the input lies.
#define INTERPOLATE(start, drop, offset, shift) \
    ((start) - (bit<32>)(((bit<64>)(drop) * (bit<64>)(offset)) >> (shift)))

// IntervalClock's working values.
header clock_h {
    bit<48> next;
    bit<48> late;
    bit<64> elapsed;
}

// A periodic update without timers: the first packet that departs at or after the next
// boundary runs it. Boundaries stay on a fixed grid of `interval` microseconds; those that
// passed without a packet are reported as `missed` (computed without division as
// elapsed * ceil(2^32 / interval) >> 32, which may count a boundary less than 2 us early).
// `due` and `missed` are 0 on entry (fields of the caller's working header, zeroed when
// it was made valid).
control IntervalClock(in bit<32> index,
                      in bit<1> fresh,
                      in bit<48> now,
                      in usec_t interval,
                      in bit<32> inv_interval,
                      inout bit<8> due,
                      inout bit<32> missed) {

    register<bit<48>>(PORT_SLOTS) next_reg;
    clock_h c;

    apply {
        c.setValid();
        next_reg.read(c.next, index);
        if (fresh == 1) {
            c.next = now + (bit<48>)interval;
        }
        c.late = now - c.next;
        if (c.late <= 0x7fffffffffff) {
            due = 1;
            c.elapsed = (bit<64>)c.late;
            if (c.elapsed > 0xffffffff) {
                c.elapsed = 0xffffffff;
            }
            missed = (bit<32>)((c.elapsed * (bit<64>)inv_interval) >> 32);
            c.next = c.next + (bit<48>)(((bit<64>)missed + 1) * (bit<64>)interval);
            // Only after an idle of more than 71 minutes (the clamp above).
            if (c.next - now > 0x7fffffffffff) {
                c.next = now + (bit<48>)interval;
            }
        }
        next_reg.write(index, c.next);
    }
}

#endif
