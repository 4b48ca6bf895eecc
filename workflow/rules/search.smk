# A search's rounds (experiments.<name>.search, strategy other than grid): round r's
# proposals, from every configuration the rounds before measured (with overlap, those
# before round r - 1, whose proposals are then in flight: round r is proposed and compiled
# while round r - 1 is measured); study.rounds: round r's measure jobs are batches
# r * jobs_per_round ... and take its file. CPU only, quick: on
# a cluster it runs on the submitting machine, between the rounds' GPU jobs. A replay gives
# back the round its capture holds, as the GPU run proposed it.


rule search:
    input:
        plans=lambda wc: [
            STUDY.plan_file(wc.experiment, v)
            for v in STUDY.experiments[wc.experiment].variants
        ],
        earlier=lambda wc: STUDY.rounds(wc.experiment).earlier(int(wc.round)),
        in_flight=lambda wc: STUDY.rounds(wc.experiment).in_flight(int(wc.round)),
        # when the search began: a time budget counts from round 0
        first=lambda wc: STUDY.rounds(wc.experiment).first(int(wc.round)),
        ceilings="results/ceilings.json",
    output:
        "results/{experiment}/search/round{round}.json",
    log:
        "results/{experiment}/search/logs/round{round}.log",
    wildcard_constraints:
        round="[0-9]+",
    params:
        cmd=lambda wc, input, output: command_line(
            "search",
            ["--round", wc.round, "--out", output[0], "--ceilings", input.ceilings],
            [
                "--settings",
                json.dumps(STUDY.experiments[wc.experiment].search.to_json()),
            ],
            ["--plans", input.plans, "--earlier", input.earlier],
            ["--first", input.first] if input.first else [],
            ["--in-flight", input.in_flight] if input.in_flight else [],
            MODE_ARGS,
        ),
    shell:
        "{params.cmd} --log {log:q}"
