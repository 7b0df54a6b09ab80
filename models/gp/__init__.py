"""CrowdGP: the multi-annotator Gaussian process of the thesis (ch. 4) and its ablations.

``likelihood`` holds the Gaussian–Bernoulli likelihood (eqs. 4.15–4.16), ``training`` the
variational EM engine (Algorithm 9), ``model`` the aggregators MAGP, GPMV and LK. Importing this
package does not import TensorFlow; importing its modules does.
"""
