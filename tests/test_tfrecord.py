import tensorflow as tf

from dataformat.tfrecord import frame


def test_framing_is_byte_identical_to_tensorflows_writer(tmp_path):
    records = [b"", b"x", b"hello world" * 100, bytes(range(256))]
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    with open(path, "rb") as file:
        assert b"".join(frame(r) for r in records) == file.read()


def test_tensorflow_reads_framed_records_back(tmp_path):
    records = [f"record {i}".encode() for i in range(50)]
    path = tmp_path / "ours.tfrecord"
    path.write_bytes(b"".join(frame(r) for r in records))
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path))] == records
