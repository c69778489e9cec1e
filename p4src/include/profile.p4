#ifndef P4AQM_PROFILE_P4
#define P4AQM_PROFILE_P4

// Build profiles (control_plane/profiles.py, docs/dataplane/profiles.md), as stratum's
// fabric-tna builds one source into several programs: `python -m control_plane.build
// --algorithms red,mecn` defines P4AQM_PROFILE, P4AQM_ALGORITHMS and one P4AQM_WITH_<PART>
// symbol per part those algorithms need (profiles.py's NEEDS says which), and the program
// carries only those parts: their aqm_config actions, controls, headers, parser states and
// metadata. Without P4AQM_PROFILE (plain p4c, `make build`) it is "all", every part.
#ifndef P4AQM_PROFILE
#define P4AQM_PROFILE all
#define P4AQM_ALGORITHMS droptail,red,red_ecn,ecnm,mecn,newque,blue,pi,rem,aecn,codel,pie,pi2,dualpi2
// One part per algorithm: its aqm_config action (and its control, where it has one) ...
#define P4AQM_WITH_DROPTAIL
#define P4AQM_WITH_RED
#define P4AQM_WITH_RED_ECN
#define P4AQM_WITH_ECNM
#define P4AQM_WITH_MECN
#define P4AQM_WITH_NEWQUE
#define P4AQM_WITH_BLUE
#define P4AQM_WITH_PI
#define P4AQM_WITH_REM
#define P4AQM_WITH_AECN
#define P4AQM_WITH_CODEL
#define P4AQM_WITH_PIE
#define P4AQM_WITH_PI2
#define P4AQM_WITH_DUALPI2
// ... and the parts algorithms share.
#define P4AQM_WITH_RED_RAMP
#define P4AQM_WITH_MECN_LEVELS
#define P4AQM_WITH_ARRIVALS
#define P4AQM_WITH_RTT_TRACKER
#define P4AQM_WITH_L4_PORTS
#define P4AQM_WITH_PI2_CONTROL
#define P4AQM_WITH_PRIORITY_QUEUES
#endif

// The record's fields (aqm_types.p4) that only some parts write: a profile's record has
// those of its parts (every field costs every AQM packet a write to zero it), and its
// telemetry exports 0 for the others, as those algorithms leave them. The arrival number
// comes with ARRIVALS, the RTT with RTT_TRACKER.
#if defined(P4AQM_WITH_CODEL) || defined(P4AQM_WITH_PIE) || defined(P4AQM_WITH_PI2_CONTROL) \
    || defined(P4AQM_WITH_PI) || defined(P4AQM_WITH_REM) || defined(P4AQM_DROP_AT_ENQUEUE)
#define P4AQM_RECORD_DEQ_QDEPTH
#endif
#if defined(P4AQM_WITH_RED_RAMP) || defined(P4AQM_WITH_CODEL) || defined(P4AQM_WITH_PIE) \
    || defined(P4AQM_WITH_PI2_CONTROL)
#define P4AQM_RECORD_AVG_COUNT
#endif
#if defined(P4AQM_WITH_RED_RAMP) || defined(P4AQM_WITH_NEWQUE) || defined(P4AQM_WITH_BLUE) \
    || defined(P4AQM_WITH_PI) || defined(P4AQM_WITH_REM) || defined(P4AQM_WITH_PIE) \
    || defined(P4AQM_WITH_PI2_CONTROL)
#define P4AQM_RECORD_PROB
#endif
#if defined(P4AQM_WITH_NEWQUE) || defined(P4AQM_WITH_BLUE) || defined(P4AQM_WITH_PI) \
    || defined(P4AQM_WITH_REM) || defined(P4AQM_WITH_AECN) || defined(P4AQM_WITH_CODEL) \
    || defined(P4AQM_WITH_PIE) || defined(P4AQM_WITH_PI2_CONTROL)
#define P4AQM_RECORD_STATE
#endif
#if defined(P4AQM_WITH_AECN) || defined(P4AQM_WITH_PI2_CONTROL)
#define P4AQM_RECORD_GROUP
#endif

// Any algorithm at all: the profile "none" forwards and counts only (aqm_dispatch.p4).
#if defined(P4AQM_WITH_DROPTAIL) || defined(P4AQM_WITH_RED) || defined(P4AQM_WITH_RED_ECN) \
    || defined(P4AQM_WITH_ECNM) || defined(P4AQM_WITH_MECN) || defined(P4AQM_WITH_NEWQUE) \
    || defined(P4AQM_WITH_BLUE) || defined(P4AQM_WITH_PI) || defined(P4AQM_WITH_REM) \
    || defined(P4AQM_WITH_AECN) || defined(P4AQM_WITH_CODEL) || defined(P4AQM_WITH_PIE) \
    || defined(P4AQM_WITH_PI2) || defined(P4AQM_WITH_DUALPI2)
#define P4AQM_ANY_ALGORITHM
#endif

// A profile whose algorithms all run one control dispatches without a condition and keeps
// no algorithm number (aqm_dispatch.p4); not with DropTail, which runs none, nor with
// AECN, whose steps around RED's control ask which algorithm the port runs.
#if (defined(P4AQM_WITH_RED_RAMP) + defined(P4AQM_WITH_NEWQUE) + defined(P4AQM_WITH_BLUE) \
     + defined(P4AQM_WITH_PI) + defined(P4AQM_WITH_REM) + defined(P4AQM_WITH_CODEL) \
     + defined(P4AQM_WITH_PIE) + defined(P4AQM_WITH_PI2_CONTROL)) == 1 \
    && !defined(P4AQM_WITH_DROPTAIL) && !defined(P4AQM_WITH_AECN)
#define P4AQM_ONE_CONTROL
#endif

// The P4Info's pkg_info says what a switch runs: name p4aqm-<profile>, and the profile's
// algorithms as the description (a -D value cannot hold quotes: p4c runs the preprocessor
// through a shell, so the strings are made here).
#define P4AQM_STRING(...) #__VA_ARGS__
#define P4AQM_EXPANDED_STRING(...) P4AQM_STRING(__VA_ARGS__)
#define P4AQM_PKG_NAME P4AQM_EXPANDED_STRING(p4aqm-P4AQM_PROFILE)
#define P4AQM_PKG_ALGORITHMS P4AQM_EXPANDED_STRING(P4AQM_ALGORITHMS)

#endif
