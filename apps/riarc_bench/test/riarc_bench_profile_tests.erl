%% riarc_bench_profile's arithmetic, on made-up measurements: what it derives from the
%% set-ups' medians (riarc / floor, cost per monitored process, per event above the floor).
-module(riarc_bench_profile_tests).

-include_lib("eunit/include/eunit.hrl").

format_test() ->
    Wall = #{baseline => 40.0, floor => 50.0, riarc => 70.0, riarc_root_only => 60.0,
             floor_all => 240.0, riarc_all => 900.0, riarc_root_only_all => 600.0},
    Ev = #{baseline => 0, floor => 300, riarc => 200, riarc_root_only => 200,
           floor_all => 200300, riarc_all => 200200, riarc_root_only_all => 200200},
    Parts = #{events_per_pinger => 2000, decode_ns => 50.0, core_ns => 150.0, batch_ns => 60.0,
              analysis_step_ns => 700.0, analyser_ns => 1500.0, idle_analyser_ns => 900.0,
              accounting_ns => 400.0},
    Text = lists:flatten(riarc_bench_profile:format(#{p => 50, r => 1000, reps => 5, wall_ms => Wall,
                                                      events => Ev, processes => 101,
                                                      parts => Parts})),
    %% 70 / 50; 20 ms above the floor, 10 of them with one tracer; (70 - 60) / 100 ms.
    ?assertNotEqual(nomatch, string:find(Text, "riarc / floor: 1.40; riarc above the floor: 20.0 ms")),
    ?assertNotEqual(nomatch, string:find(Text, "(root only - floor): 10.0 ms")),
    ?assertNotEqual(nomatch, string:find(Text, "(tracer, takeover, analysis process): 100 us")),
    %% (240 - 40) ms over 200 300 events; ((600 - 60) - (240 - 50)) ms over 200 000 events.
    ?assertNotEqual(nomatch, string:find(Text, "per event): 999 ns")),
    ?assertNotEqual(nomatch, string:find(Text, "root only): 1750 ns")).

format_load_test() ->
    S = fun(W, Cpu, Cs, Ev, M) -> #{wall_ms => W, cpu_ms => Cpu, cs => Cs, events => Ev, lat_mean_us => M} end,
    Text = lists:flatten(riarc_bench_profile:format_load(
                           #{n => 3000, reps => 5,
                             setups => [{baseline, S(1000, 400, 40000, 0, 500)},
                                        {tracing, S(1500, 1000, 90000, 600000, 40000)},
                                        {riarc, S(5000, 2500, 210000, 600000, 150000)},
                                        {centralised, S(2000, 1450, 60000, 600000, 50000)}]})),
    %% riarc: 1500 ms of CPU and 120 000 switches above the floor over 600 000 events.
    ?assertNotEqual(nomatch, string:find(Text, "2.50  0.200")),
    %% centralised: 450 ms, -30 000 switches.
    ?assertNotEqual(nomatch, string:find(Text, "0.750  -0.050")).
