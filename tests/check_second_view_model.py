#!/usr/bin/env python3
"""data/models/second_view_model.py, end to end: joins a config-less fp8 model reading the search's
pick with a tree's model as its second view, and checks what the CLI answers with the joined file
(the geometric mean of the two latencies, the lesser bound, the pick's config), that joining the
joined file with another view replaces its view, and that the two models given the wrong way round
are refused by name.

    python3 tests/check_second_view_model.py CLI PICK.json VIEW.json OUT_DIR KERNEL
"""
import json
import math
import os
import subprocess
import sys

cli, pick, view, out_dir, kernel = sys.argv[1:6]
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models", "second_view_model.py")
joined = os.path.join(out_dir, "two_views.json.gz")
other_view = os.path.join(out_dir, "other_view.json")
again = os.path.join(out_dir, "two_views_again.json.gz")


def fail(message):
    print(f"check_second_view_model: {message}")
    sys.exit(1)


def join(model, second, out):
    return subprocess.run([sys.executable, script, model, second, "--out", out], capture_output=True, text=True)


def predict(model):
    done = subprocess.run([cli, "predict", "--gpu", "H100-SXM", "--model", model, "--json", kernel], capture_output=True,
                          text=True)
    if done.returncode != 0:
        fail(f"predict with {model} failed: {done.stderr}")
    return json.loads(done.stdout)["predictions"][0]


done = join(pick, view, joined)
if done.returncode != 0:
    fail(f"the join failed: {done.stderr}")
alone, tree, both = predict(pick), predict(view), predict(joined)
for name, answer in (("the pick", alone), ("the view", tree)):
    if answer.get("extrapolated"):
        fail(f"{name} is outside its ground for {kernel}: the view would not apply")
if abs(alone["latency_us"] / tree["latency_us"] - 1) < 0.01:
    fail(f"the two answers are within 1% ({alone['latency_us']}, {tree['latency_us']}): their mean tells nothing")
mean = math.sqrt(alone["latency_us"] * tree["latency_us"])
if abs(both["latency_us"] / mean - 1) > 1e-9:
    fail(f"the joined model answered {both['latency_us']} us, the geometric mean of {alone['latency_us']} and "
         f"{tree['latency_us']} is {mean}")
if both["lower_bound_us"] != min(alone["lower_bound_us"], tree["lower_bound_us"]) or both["config"] != alone["config"]:
    fail(f"the joined model's bound or config is not the lesser bound and the pick's config: {both}")
# Joined again with another view (the same but for its factor): the new view answers, the old one is gone.
with open(view) as f:
    document = json.load(f)
document["latency_scale"] = 1.25
with open(other_view, "w") as f:
    json.dump(document, f)
done = join(joined, other_view, again)
if done.returncode != 0:
    fail(f"joining the joined file with another view failed: {done.stderr}")
replaced, slower = predict(again), predict(other_view)
if abs(replaced["latency_us"] / math.sqrt(alone["latency_us"] * slower["latency_us"]) - 1) > 1e-9:
    fail(f"joined again with another view, the model answered {replaced['latency_us']} us, not the mean of the pick's "
         f"{alone['latency_us']} and the new view's {slower['latency_us']}")
done = join(view, pick, os.path.join(out_dir, "never.json"))
if done.returncode == 0 or "must be a model for GEMMs without a config that reads the search's pick" not in done.stderr:
    fail(f"the models the wrong way round were not refused by name: {done.returncode}, {done.stderr}")
print(f"joined: {both['latency_us']:.4f} us = sqrt({alone['latency_us']:.4f} x {tree['latency_us']:.4f})")
