"""FictionalQA (Kirchenbauer et al.): corpus -> splits -> fine-tuning -> checkpoint evaluation -> statistics -> figures."""
