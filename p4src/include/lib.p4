#ifndef P4AQM_LIB_P4
#define P4AQM_LIB_P4

#include "defines.p4"

// What the algorithms share: the test of time order, lookup-table interpolation and a
// clock for periodic updates. (Macros, not functions: p4c gives each function call
// temporaries, and temporaries are metadata that every packet pays for; see defines.p4.)

// Time order across wrap-around, the one test of it: USEC48 times wrap (and a departure
// can be stamped a little before the arrival it follows), so a difference d = t - since,
// taken modulo 2^48, says t is before since when it is at least half the range
// (control_plane/algorithms/base.py's negative48 and at_or_after).
#define NEGATIVE48(d) ((d) >= 48w0x800000000000)
#define AT_OR_AFTER(t, since) (!NEGATIVE48((t) - (since)))

// A tunable of the port's algorithm: the action data its aqm_config action wrote into the
// algorithm's header, or, in a program built for one configuration (`tooling/build.py
// --constants FILE`, for an algorithm whose class says `constants`), the value the build
// encoded from that file (generated with P4AQM_CONSTANTS, one per name): then the header
// has no field for it and the action no write, which every packet would pay for
// (defines.p4).
//   PARAM(v, name)               reads it
//   PARAM_FIELD(type, name)      declares its field in the header
//   SET_PARAM(v, name, value)    the action's write of it
#ifdef P4AQM_CONSTANTS
#define PARAM(v, name) (P4AQM_CONSTANT_##name)
#define PARAM_FIELD(type, name)
#define SET_PARAM(v, name, value)
#else
#define PARAM(v, name) v.name
#define PARAM_FIELD(type, name) type name;
#define SET_PARAM(v, name, value) v.name = value;
#endif

// Linear interpolation inside one bucket of a lookup table (control_plane/lookup.py): the
// value at the bucket's start minus its drop across the bucket, scaled by how far into the
// bucket (offset < 2^shift <= 2^31) the input lies.
#define INTERPOLATE(start, drop, offset, shift) \
    ((start) - (bit<32>)(((bit<64>)(drop) * (bit<64>)(offset)) >> (shift)))

// A periodic update without timers: the first packet that departs at or after the next
// boundary runs it. Boundaries stay on a fixed grid of `interval` microseconds; those that
// passed without a packet are reported as `missed` (computed without division as
// elapsed * ceil(2^32 / interval) >> 32, elapsed saturated at 2^32 - 1 microseconds, which
// may count a boundary less than 2 us early). `next` (the next boundary), `due` and
// `missed` are fields of the caller's header (no header of its own: each costs every
// packet, defines.p4); `due` and `missed` are 0 on entry (zeroed when it was made valid).
control IntervalClock(in port_t index,
                      in bit<1> fresh,
                      in bit<48> now,
                      in usec_t interval,
                      in bit<32> inv_interval,
                      inout bit<48> next,
                      inout bit<8> due,
                      inout bit<32> missed) {

    register<bit<48>, port_t>(PORT_SLOTS) next_reg;

    apply {
        next_reg.read(next, index);
        if (fresh == 1) {
            next = now + (bit<48>)interval;
        }
        if (AT_OR_AFTER(now, next)) {
            if (now - next > 0xffffffff) {
                missed = (bit<32>)((64w0xffffffff * (bit<64>)inv_interval) >> 32);
            } else {
                missed = (bit<32>)(((bit<64>)(now - next) * (bit<64>)inv_interval) >> 32);
            }
            // Here, not before the `if`: one stretch of code, one table (defines.p4).
            due = 1;
            next = next + (bit<48>)(((bit<64>)missed + 1) * (bit<64>)interval);
            // Only after an idle of more than 71 minutes (the saturation above).
            if (!AT_OR_AFTER(next, now)) {
                next = now + (bit<48>)interval;
            }
        }
        next_reg.write(index, next);
    }
}

#endif
