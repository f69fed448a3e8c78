"""MobileNetV2 (Sandler et al. 2018) from tf_keras.applications: 96x96 images, 10 classes, no weights.

placer-extract --model=examples/mobilenet_v2.py:mobilenet_v2 --cluster=local:4 --out=mnv2.graph.json.gz
"""

import tf_keras


def mobilenet_v2():
    """A compiled tf_keras MobileNetV2 for 96x96x3 images and 10 classes, trained from scratch."""
    model = tf_keras.applications.MobileNetV2(
        input_shape=(96, 96, 3), weights=None, classes=10, classifier_activation=None
    )
    model.compile(
        optimizer=tf_keras.optimizers.SGD(0.01, momentum=0.9),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model
