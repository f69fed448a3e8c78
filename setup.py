"""Device placement toolkit: RL placement, baselines, SLAQ sharing for TF graphs."""

from setuptools import find_packages, setup

setup(
    name="placer-toolkit",
    version="0.1.0",
    description="Device placement for TensorFlow training graphs: RL placer, baselines, SLAQ.",
    python_requires=">=3.10",
    packages=find_packages(include=["placer*", "models*", "graphs*", "baselines*", "configs*"]),
    package_data={"configs": ["clusters/*.json", "*.py", "searches/*.py"]},
    install_requires=[
        "tensorflow>=2.16",
        "tf-keras>=2.16",
        "numpy",
        "numba",
        "scipy",
        "networkx",
        "tqdm",
        "tabulate",
        "absl-py",
        "ml-collections",
        "matplotlib",
        "tensorboard",
        "pyscotch",
        "pymetis",
    ],
    extras_require={
        # pytest 9.2 keeps a test's id where pytest-xdist 3.8's --dist loadgroup cannot tag it with its group, so
        # the groups (one Ray cluster, one file's module fixtures) would be split over the workers.
        "test": ["pytest<9.2", "pytest-xdist", "ruff", "import-linter"],
        "ray": ["ray"],
        # CP-SAT for the exact placer (placer.measure.exact). 9.15 asks for protobuf 6.33, which TF >= 2.16 accepts.
        "exact": ["ortools==9.15.6755"],
    },
    entry_points={
        "console_scripts": [
            "placer-extract=placer.extract_main:run",
            "placer-measure=placer.measure_main:run",
            "placer-train=placer.train_main:run",
            "placer-compare=placer.compare_main:run",
            "placer-apply=placer.apply_main:run",
            "placer-search=placer.search_main:run",
            "placer-pretrain=placer.pretrain_main:run",
            "placer-place=placer.place_main:run",
        ]
    },
)
