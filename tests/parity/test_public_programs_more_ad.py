"""Reinforcement-learning programs people copy, heavy on ``torch.distributions``
(``programs/rl_ad/``): PPO (nikhilbarhate99/PPO-PyTorch; openai/spinningup's; vwxyzjn/cleanrl's), SAC
(pranz24/pytorch-soft-actor-critic), TD3 and DDPG (sfujim/TD3), each re-implemented with
the same torch calls and habits on a tiny seeded environment of its own (no gym), plus a
printout of the distribution idioms around them. Each runs as a script, on torch and then,
with only its imports changed, on shardflow, from the program's own ``manual_seed`` (no
weight copying, no shared draws: ``Categorical``/``MultivariateNormal`` samples,
``Normal.rsample`` noise, ``randn_like`` target smoothing and ``normal_`` exploration noise
are torch's numbers in shardflow too, docs/COMPAT.md "Random seeds").

Compared: every printed line (``print(model)``, losses printed with 6 decimals, rewards,
actions, reprs, validation errors) -- the text exactly, the numbers to rtol 1e-5 / atol
2e-6 (a loss printed with ``{:.6f}`` can differ by one unit in its last digit: measured,
each program has one to four such lines, all 1e-6 apart); the trained networks to rtol
1e-5 / atol 1e-6. Every sampled action depends on the weights, so a drift past rounding
would change the episodes and show in the rewards.

Deviation kept: shardflow's ``kl_divergence`` error for an unregistered pair adds the fix
("; register one with @register_kl(P, Q)") after torch's sentence.
"""

from pathlib import Path

import pytest

from .programs._harness import assert_same_state, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

HERE = Path(__file__).parent / "programs" / "rl_ad"


def _run(name, argv, capsys, entry="main"):
    """``[(result of the script's entry function, printed lines), torch then shardflow]``;
    ``entry=None``: the script runs as ``__main__`` and leaves its result in ``agent``
    (CleanRL's dataclass needs its module in ``sys.modules``, as ``__main__`` is)."""
    runs = []
    for use_sf in (False, True):
        mod = run_script(HERE / f"{name}.py", use_sf, argv=argv, as_main=entry is None)
        if entry is None:
            runs.append((mod.agent, capsys.readouterr().out.splitlines()))
            continue
        fn = getattr(mod, entry)
        result = fn(list(argv)) if fn.__code__.co_argcount else fn()
        runs.append((result, capsys.readouterr().out.splitlines()))
    return runs


def _same(runs, what):
    (_, th_lines), (_, sf_lines) = runs
    same_printout(sf_lines, th_lines, rtol=1e-5, atol=2e-6, what=what)


def test_ppo_and_spinup_ppo_like_torch(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the checkpoint
    for argv in ([], ["--continuous"]):
        runs = _run("ppo", argv, capsys, entry="train")
        _same(runs, f"ppo {argv}")
        (th_agent, th_fresh, th_losses), (sf_agent, sf_fresh, sf_losses) = [r for r, _ in runs]
        assert len(sf_losses) == len(th_losses) == 9
        assert_same_state(sf_agent.policy, th_agent.policy, f"ppo {argv} policy", rtol=1e-5, atol=1e-6)
        # the reloaded checkpoint is the trained old policy
        assert_same_state(sf_fresh.policy, th_agent.policy_old, f"ppo {argv} reloaded", rtol=1e-5, atol=1e-6)
        if argv:
            assert float(sf_agent.policy.action_var[0]) == pytest.approx(0.2 * 0.2)

    for argv in ([], ["--discrete"]):
        runs = _run("spinup_ppo", argv, capsys)
        _same(runs, f"spinup ppo {argv}")
        (th_ac, _), (sf_ac, _) = runs
        assert_same_state(sf_ac, th_ac, f"spinup ppo {argv}", rtol=1e-5, atol=1e-6)

def test_sac_td3_ddpg_cleanrl_and_distribution_idioms_like_torch(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # checkpoints, ./models
    for argv in ([], ["--continuous"]):
        # orthogonal_ init: QR by NumPy's LAPACK where torch's differs in the last ulps (1e-7)
        runs = _run("cleanrl_ppo", argv, capsys, entry=None)
        _same(runs, f"cleanrl ppo {argv}")
        (th_agent, _), (sf_agent, _) = runs
        assert_same_state(sf_agent, th_agent, f"cleanrl ppo {argv}", rtol=1e-5, atol=1e-6)
    for argv in (["--automatic_entropy_tuning", "True"], ["--policy", "Deterministic"]):
        runs = _run("sac", argv, capsys)
        _same(runs, f"sac {argv}")
        (th_agent, th_log), (sf_agent, sf_log) = [r for r, _ in runs]
        assert len(sf_log) == len(th_log) == 31
        for part in ("policy", "critic", "critic_target"):
            assert_same_state(getattr(sf_agent, part), getattr(th_agent, part), f"sac {argv} {part}",
                              rtol=1e-5, atol=1e-6)
        if argv[0] == "--automatic_entropy_tuning":
            assert sf_agent.log_alpha.item() == pytest.approx(th_agent.log_alpha.item(), rel=1e-5)

    for argv in (["--save_model"], ["--policy", "DDPG", "--save_model"]):
        runs = _run("td3", argv, capsys)
        _same(runs, f"td3 {argv}")
        (th_policy, th_log), (sf_policy, sf_log) = [r for r, _ in runs]
        assert len(sf_log) == len(th_log) == 28
        for part in ("actor", "actor_target", "critic", "critic_target"):
            assert_same_state(getattr(sf_policy, part), getattr(th_policy, part), f"td3 {argv} {part}",
                              rtol=1e-5, atol=1e-6)
        # load() deep-copies the trained critic into the target: no gradients come along
        assert sf_policy.critic_target.l1.weight.grad is None
        assert th_policy.critic_target.l1.weight.grad is None

    runs = _run("distributions_idioms", [], capsys)
    (_, th_lines), (_, sf_lines) = runs
    suffix = "; register one with @register_kl(Normal, Categorical)"
    assert sf_lines[-1].endswith(suffix)
    sf_lines[-1] = sf_lines[-1][: -len(suffix)]
    same_printout(sf_lines, th_lines, rtol=1e-5, atol=1e-6, what="distributions idioms")

