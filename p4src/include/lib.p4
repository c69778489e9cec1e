#ifndef P4AQM_LIB_P4
#define P4AQM_LIB_P4

#include "defines.p4"

// Helpers the algorithms share: lookup-table interpolation, saturating FRAC32 steps, the
// arrival time of a packet, and a clock for periodic updates.

// Linear interpolation inside one bucket of a lookup table (control_plane/lookup.py): the
// value at the bucket's start minus its drop across the bucket, scaled by how far into the
// bucket (offset < 2^shift <= 2^31) the input lies.
bit<32> interpolate(in bit<32> start, in bit<32> drop, in bit<48> offset, in bit<8> shift) {
    return start - (bit<32>)(((bit<64>)drop * (bit<64>)offset) >> shift);
}

// The lookup-table bucket of an input, saturated to the last key.
bit<16> bucket_of(in bit<48> x, in bit<8> shift) {
    bit<48> b = x >> shift;
    if (b > (bit<48>)BUCKET_MAX) {
        b = (bit<48>)BUCKET_MAX;
    }
    return (bit<16>)b;
}

frac32_t frac32_add(in frac32_t x, in frac32_t step) {
    bit<33> sum = (bit<33>)x + (bit<33>)step;
    if (sum > (bit<33>)FRAC32_ONE) {
        sum = (bit<33>)FRAC32_ONE;
    }
    return (frac32_t)sum;
}

frac32_t frac32_sub(in frac32_t x, in frac32_t step) {
    frac32_t rest = 0;
    if (step < x) {
        rest = x - step;
    }
    return rest;
}

// USEC48 time b - a, or 0 when b is stamped before a (the departure of the previous
// packet can be stamped a little after this packet's arrival).
bit<48> elapsed_since(in bit<48> a, in bit<48> b) {
    bit<48> d = b - a;
    if (d > 0x7fffffffffff) {
        d = 0;
    }
    return d;
}

// A periodic update without timers: the first packet that departs at or after the next
// boundary runs it. Boundaries stay on a fixed grid of `interval` microseconds; those that
// passed without a packet are reported as `missed` (computed without division as
// elapsed * ceil(2^32 / interval) >> 32, which may count a boundary less than 2 us early).
control IntervalClock(in port_t port,
                      in bit<1> fresh,
                      in bit<48> now,
                      in usec_t interval,
                      in bit<32> inv_interval,
                      out bool due,
                      out bit<32> missed) {

    register<bit<48>>(PORT_SLOTS) next_reg;

    apply {
        bit<48> next;
        next_reg.read(next, (bit<32>)port);
        if (fresh == 1) {
            next = now + (bit<48>)interval;
        }
        due = false;
        missed = 0;
        bit<48> late = now - next;
        if (late <= 0x7fffffffffff) {
            due = true;
            bit<64> e = (bit<64>)late;
            if (e > 0xffffffff) {
                e = 0xffffffff;
            }
            missed = (bit<32>)((e * (bit<64>)inv_interval) >> 32);
            next = next + (bit<48>)(((bit<64>)missed + 1) * (bit<64>)interval);
            // Only after an idle of more than 71 minutes (the clamp above).
            if (next - now > 0x7fffffffffff) {
                next = now + (bit<48>)interval;
            }
        }
        next_reg.write((bit<32>)port, next);
    }
}

#endif
