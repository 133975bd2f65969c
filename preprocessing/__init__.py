"""Raw data to sharded TFRecord files of tf.train.Example plus metadata.json."""
