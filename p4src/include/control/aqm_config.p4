#ifndef P4AQM_AQM_CONFIG_P4
#define P4AQM_AQM_CONFIG_P4

#include "../headers.p4"

// Chooses and parameterises the AQM of an egress port: one action per algorithm, each
// defined in the algorithm's file under aqm/. Every parameter is action data written over
// P4Runtime; control_plane/algorithms/ builds these actions from physical values.
control AqmConfig(in port_t port, inout aqm_params_t p) {

    action no_aqm() {
        p.common.algorithm = ALGO_NONE;
    }

    table aqm_config {
        key = { port: exact @name("port"); }
        actions = {
            droptail(p.common);
            red(p.common, p.red);
            red_ecn(p.common, p.red);
            ecnm(p.common, p.red);
            mecn(p.common, p.red);
            newque(p.common, p.newque);
            blue(p.common, p.blue);
            pi(p.common, p.pi);
            rem(p.common, p.rem);
            @defaultonly no_aqm;
        }
        const default_action = no_aqm();
        size = PORT_SLOTS;
    }

    apply {
        aqm_config.apply();
    }
}

#endif
