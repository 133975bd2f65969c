"""Running a queue-backed input_fn in a test: a real MonitoredSession with its queue runners."""

import tensorflow as tf


def run_batches(input_fn, limit=None):
    """Batches from the input_fn until the queues run dry (or `limit` batches)."""
    with tf.Graph().as_default():
        features, labels = input_fn()
        batches = []
        with tf.compat.v1.train.MonitoredSession() as session:
            while not session.should_stop() and (limit is None or len(batches) < limit):
                batches.append(session.run((features, labels)))
    return batches
