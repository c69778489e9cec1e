#ifndef P4AQM_PROFILE_P4
#define P4AQM_PROFILE_P4

// Build profiles (control_plane/profiles.py, docs/dataplane/profiles.md), as stratum's
// fabric-tna builds one source into several programs: `python -m control_plane.build
// --algorithms red,mecn` (or `make build`, profile "all") generates p4aqm_profile.p4 from
// the algorithm registry (control_plane/algorithms/) and compiles the program with it, so
// the program carries only those algorithms and the parts they need. It defines:
//   P4AQM_PKG_NAME, P4AQM_PKG_ALGORITHMS  the P4Info's pkg_info: name p4aqm-<profile>, and
//                         the profile's algorithms as its description (main.p4)
//   P4AQM_WITH_<PART>     each shared part the algorithms need (profiles.SHARED_PARTS);
//                         P4AQM_WITH_DRAWS where one of them draws (profiles.DRAWS); and
//                         each optional part the profile keeps (profiles.OPTIONAL_PARTS,
//                         the seeded stream only with the draw; "+lean" keeps none)
//   P4AQM_RECORD_<FIELD>  each field of the record only some algorithms write that theirs
//                         do (aqm_types.p4: every field costs every AQM packet a write)
//   P4AQM_ANY_ALGORITHM   unless the profile is "none", which forwards and counts only
//   P4AQM_ONE_CONTROL     when its algorithms all run one control: the dispatch then has no
//                         condition and the record no control number (aqm_dispatch.p4)
//   P4AQM_DROP_AT_ENQUEUE the program whose AQM runs in ingress (queue_at_arrival.p4)
// and the lists the dispatch and the parameters expand (X-macros: each list applies its
// argument X to every entry):
//   P4AQM_FOR_EACH_ALGORITHM(X)  X(ACTION, action): each algorithm's aqm_config action,
//                         <ACTION>_ACTION in its file
//   P4AQM_FOR_EACH_CONTROL(X)    X(CONTROL, Control, name, id): each control those run,
//                         its parameters name_h, applied by <CONTROL>_APPLY(instance) in its
//                         file, with its number (<CONTROL>_ID below)
//   P4AQM_FOR_EACH_AROUND(X)     X(ACTION, action): each algorithm with steps around its
//                         control (<ACTION>_INSTANCES and <ACTION>_AROUND(run), its
//                         parameters action_h: AECN's around RED's)
//   P4AQM_RUN_<CONTROL>(instance) the control applied with its algorithms' steps around it
// and p4aqm_algorithms.p4 includes each algorithm's file (headers.p4).
#if __has_include("p4aqm_profile.p4")
#include "p4aqm_profile.p4"
#else
#error "p4aqm_profile.p4 is generated: build with make build or python -m control_plane.build"
#endif

// Each control's number, aqm_record_h.algorithm (DropTail runs none).
const bit<8> NO_CONTROL_ID = 0;
#define AQM_CONTROL_ID(CONTROL, Control, name, id) const bit<8> CONTROL##_ID = id;
P4AQM_FOR_EACH_CONTROL(AQM_CONTROL_ID)

#endif
