"""The model registry and the model formats (CatBoost, ONNX, logged predictions, the positive control's oracle), each format with its Beam inference handler."""
