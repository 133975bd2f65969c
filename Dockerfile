# The trainer as a Vertex AI custom container: python -m trainer.task on TensorFlow 2.15 with CUDA.
# Google's prebuilt TF 2.15 training images are past end of availability, so jobs use this one:
#   docker build -t REGION-docker.pkg.dev/PROJECT/REPOSITORY/queue-trainer:TAG .
#   docker push REGION-docker.pkg.dev/PROJECT/REPOSITORY/queue-trainer:TAG
# It runs on CPU machines too (TensorFlow falls back to the CPU when there is no GPU).
# Try it locally as Vertex AI runs it (needs Docker):
#   gcloud ai custom-jobs local-run --executor-image-uri=IMAGE -- --data-dir gs://BUCKET/data/mnist --job-dir ...
# Everything is pinned: the base image by its version tag, every Python package by docker-constraints.txt.
FROM tensorflow/tensorflow:2.15.0-gpu

WORKDIR /app

# The base image brings TensorFlow 2.15, so plain `pip install .` (no [cpu] or [gpu] extra)
# adds only the package and its other dependencies.
COPY setup.py README.md docker-constraints.txt ./
COPY dataformat dataformat/
COPY preprocessing preprocessing/
COPY trainer trainer/
COPY configs configs/
# The check fails the build if a dependency ever pulled in another TensorFlow.
RUN pip install --no-cache-dir --root-user-action=ignore --constraint docker-constraints.txt . \
    && python -c "import tensorflow as tf, trainer.task; assert tf.__version__.startswith('2.15')"

ENTRYPOINT ["python", "-m", "trainer.task"]
